package pkgs

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/histor-observer/histor/sandbox"
)

// packument is the part of an npm registry document histor reads. Versions
// stay raw: each is decoded leniently on its own, so one malformed version
// does not hide the others.
type packument struct {
	Name     string                     `json:"name"`
	DistTags map[string]string          `json:"dist-tags"`
	Versions map[string]json.RawMessage `json:"versions"`
}

// npmVersion is one version document. Members whose type varies between
// publishes (bin, scripts, the user) are read by hand from raw JSON.
type npmVersion struct {
	Name         string                     `json:"name"`
	Version      string                     `json:"version"`
	Scripts      map[string]json.RawMessage `json:"scripts"`
	Dependencies map[string]json.RawMessage `json:"dependencies"`
	Bin          json.RawMessage            `json:"bin"`
	NPMUser      json.RawMessage            `json:"_npmUser"`
	Dist         struct {
		Tarball      string          `json:"tarball"`
		Shasum       string          `json:"shasum"`
		Integrity    string          `json:"integrity"`
		Signatures   json.RawMessage `json:"signatures"`
		Attestations json.RawMessage `json:"attestations"`
	} `json:"dist"`
}

// npmPath is the registry path of a package: a scoped name's "/" escaped,
// its "@" kept, as the registry expects.
func npmPath(name string) string {
	return strings.Replace(url.PathEscape(name), "%40", "@", 1)
}

func (p *Packages) resolveNPM(ctx context.Context, spec Spec) (*Resolved, error) {
	code, body, err := p.get(ctx, p.cfg.NPMRegistry+"/"+npmPath(spec.Name), "application/json", p.cfg.MaxMetadata)
	if err != nil || code != 200 {
		return nil, metadataFailure("npm:"+spec.Name, code, err)
	}
	var doc packument
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fail(sandbox.StatusInspectionFailed, err, "npm:%s: unreadable packument", spec.Name)
	}
	v, err := doc.pick(spec)
	if err != nil {
		return nil, err
	}
	d, ok := npmDigest(v.Dist.Integrity, v.Dist.Shasum)
	if !ok {
		return nil, fail(sandbox.StatusInstallFailed, nil, "npm:%s@%s: the registry published no integrity to check the tarball against", v.Name, v.Version)
	}
	if t, err := url.Parse(v.Dist.Tarball); err != nil || (t.Scheme != "https" && t.Scheme != "http") {
		return nil, fail(sandbox.StatusInstallFailed, err, "npm:%s@%s: no usable tarball URL", v.Name, v.Version)
	}
	spec.Version = v.Version
	return &Resolved{
		Spec: spec, Artifact: spec.Artifact(), Integrity: firstNonEmpty(v.Dist.Integrity, v.Dist.Shasum),
		URL: v.Dist.Tarball, Facts: v.facts(), check: d,
	}, nil
}

// pick finds the asked-for version: an exact version, else a dist-tag (a
// missing version means dist-tags.latest).
func (doc *packument) pick(spec Spec) (*npmVersion, error) {
	want := spec.Version
	if tagged, ok := doc.DistTags[firstNonEmpty(want, "latest")]; ok && doc.Versions[want] == nil {
		want = tagged
	}
	raw := doc.Versions[want]
	if raw == nil {
		return nil, fail(sandbox.StatusNotFound, nil, "npm:%s: no version %q in the registry", spec.Name, firstNonEmpty(spec.Version, "latest"))
	}
	var v npmVersion
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fail(sandbox.StatusInspectionFailed, err, "npm:%s@%s: unreadable version document", spec.Name, want)
	}
	if v.Name != spec.Name || v.Version != want || !version.MatchString(v.Version) {
		return nil, fail(sandbox.StatusInspectionFailed, nil, "npm:%s@%s: the version document names %q@%q", spec.Name, want, clip(v.Name, 100), clip(v.Version, 64))
	}
	return &v, nil
}

// PackumentFacts are the version facts of one version in an npm packument
// (the registry's GET /<name> document), with no previous version compared.
func PackumentFacts(doc []byte, ver string) (sandbox.VersionFacts, error) {
	var p packument
	if err := json.Unmarshal(doc, &p); err != nil {
		return sandbox.VersionFacts{}, fmt.Errorf("reading packument: %w", err)
	}
	raw := p.Versions[ver]
	if raw == nil {
		return sandbox.VersionFacts{}, fmt.Errorf("reading packument: no version %q", ver)
	}
	var v npmVersion
	if err := json.Unmarshal(raw, &v); err != nil {
		return sandbox.VersionFacts{}, fmt.Errorf("reading packument version %q: %w", ver, err)
	}
	return v.facts(), nil
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
