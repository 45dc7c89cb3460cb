package pkgs

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/histor-observer/histor/sandbox"
)

// pypiDoc is the part of PyPI's JSON API answer histor reads
// (https://docs.pypi.org/api/json/).
type pypiDoc struct {
	Info struct {
		Name         string   `json:"name"`
		Version      string   `json:"version"`
		RequiresDist []string `json:"requires_dist"`
	} `json:"info"`
	URLs []pypiFile `json:"urls"`
}

type pypiFile struct {
	Filename    string `json:"filename"`
	URL         string `json:"url"`
	PackageType string `json:"packagetype"`
	Digests     struct {
		SHA256 string `json:"sha256"`
	} `json:"digests"`
	Yanked bool `json:"yanked"`
}

// wheelName is a wheel file name (PEP 427): distribution, version, optional
// build tag, python, abi and platform tags. Nothing that could be a path.
var wheelName = regexp.MustCompile(`^([A-Za-z0-9_.]+)-([A-Za-z0-9_.!+]+)(-[0-9][A-Za-z0-9_.]*)?-([A-Za-z0-9_.]+)-([A-Za-z0-9_.]+)-([A-Za-z0-9_.]+)\.whl$`)

func (p *Packages) resolvePyPI(ctx context.Context, spec Spec) (*Resolved, error) {
	u := p.cfg.PyPI + "/pypi/" + url.PathEscape(spec.Name) + "/json"
	if spec.Version != "" {
		u = p.cfg.PyPI + "/pypi/" + url.PathEscape(spec.Name) + "/" + url.PathEscape(spec.Version) + "/json"
	}
	code, body, err := p.get(ctx, u, "application/json", p.cfg.MaxMetadata)
	if err != nil || code != 200 {
		return nil, metadataFailure("pypi:"+spec.Name, code, err)
	}
	var doc pypiDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fail(sandbox.StatusInspectionFailed, err, "pypi:%s: unreadable JSON API answer", spec.Name)
	}
	if NormalisePyPI(doc.Info.Name) != spec.Name || !version.MatchString(doc.Info.Version) {
		return nil, fail(sandbox.StatusInspectionFailed, nil, "pypi:%s: the answer names %q %q", spec.Name, clip(doc.Info.Name, 100), clip(doc.Info.Version, 64))
	}
	spec.Version = doc.Info.Version
	w, err := pickWheel(spec, doc.URLs)
	if err != nil {
		return nil, err
	}
	d, _ := sha256Digest(w.Digests.SHA256)
	r := &Resolved{
		Spec: spec, Artifact: spec.Artifact(), Integrity: "sha256:" + hex.EncodeToString(d.want),
		URL: w.URL, Filename: w.Filename, check: d,
		Facts: pypiFacts(doc.Info.RequiresDist, p.provenance(ctx, spec, w.Filename)),
	}
	return r, nil
}

// pickWheel prefers a pure wheel (*-none-any.whl) that was not yanked.
// With only an sdist, nothing is installed: building it runs its code.
func pickWheel(spec Spec, files []pypiFile) (*pypiFile, error) {
	var wheels []*pypiFile
	for i := range files {
		f := &files[i]
		m := wheelName.FindStringSubmatch(f.Filename)
		if f.PackageType == "bdist_wheel" && m != nil && NormalisePyPI(m[1]) == spec.Name {
			wheels = append(wheels, f)
		}
	}
	if len(wheels) == 0 {
		return nil, fail(sandbox.StatusNoWheel, nil, "only an sdist: building it would run the package's code")
	}
	rank := func(f *pypiFile) int {
		r := 0
		if strings.HasSuffix(f.Filename, "-none-any.whl") {
			r += 2
		}
		if !f.Yanked {
			r += 4
		}
		return r
	}
	best := slices.MaxFunc(wheels, func(a, b *pypiFile) int { return rank(a) - rank(b) })
	if _, ok := sha256Digest(best.Digests.SHA256); !ok {
		return nil, fail(sandbox.StatusInstallFailed, nil, "%s: the registry published no sha256 to check it against", best.Filename)
	}
	if u, err := url.Parse(best.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fail(sandbox.StatusInstallFailed, err, "%s: no usable download URL", best.Filename)
	}
	return best, nil
}

// provenance asks PyPI's integrity API (PEP 740) whether the wheel has
// attestations: 200 present, 404 absent, anything else unknown.
func (p *Packages) provenance(ctx context.Context, spec Spec, filename string) string {
	u := p.cfg.PyPI + "/integrity/" + url.PathEscape(spec.Name) + "/" + url.PathEscape(spec.Version) + "/" + url.PathEscape(filename) + "/provenance"
	code, _, err := p.get(ctx, u, "application/vnd.pypi.integrity.v1+json", 4<<20)
	switch {
	case err != nil:
		return Unknown
	case code == 200:
		return ProvenancePresent
	case code == 404:
		return ProvenanceAbsent
	}
	return Unknown
}

// requirementName ends where a PEP 508 requirement's name ends.
var requirementName = regexp.MustCompile(`^[A-Za-z0-9._-]+`)

// pypiFacts: PyPI names no publisher; dependencies are keyed by their
// PEP 503 name, each with its requirements (several joined by " | ").
func pypiFacts(requiresDist []string, provenance string) sandbox.VersionFacts {
	f := sandbox.VersionFacts{Provenance: provenance, Publisher: Unknown, InstallScripts: []string{}, Dependencies: map[string]string{}}
	specs := map[string][]string{}
	for _, r := range requiresDist {
		if name := requirementName.FindString(strings.TrimSpace(r)); name != "" {
			n := NormalisePyPI(name)
			specs[n] = append(specs[n], clip(strings.TrimSpace(r), 200))
		}
	}
	for _, name := range firstKeys(specs, maxDependencies) {
		slices.Sort(specs[name])
		f.Dependencies[name] = strings.Join(specs[name], " | ")
	}
	Compare(&f, "", nil)
	return f
}
