package pkgs

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/histor-observer/histor/sandbox"
)

// The values of VersionFacts.Provenance and Publisher.
const (
	ProvenancePresent = "present"
	ProvenanceAbsent  = "absent"
	Unknown           = "unknown"
)

// The signals Compare raises: the classic marks of a stolen publishing
// token, and a version that runs code on install at all.
const (
	SignalProvenanceLost         = "provenance-lost"
	SignalPublisherChanged       = "publisher-changed"
	SignalInstallScriptsAdded    = "install-scripts-added"
	SignalNewDependencies        = "new-dependencies"
	SignalDependencySpecsChanged = "dependency-specs-changed"
	SignalInstallScripts         = "install-scripts"
)

// maxDependencies bounds the dependencies one version's facts keep.
const maxDependencies = 300

var installScriptNames = []string{"preinstall", "install", "postinstall"}

func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// facts reads what the registry says about the version. The registry
// reached from these machines strips _npmUser, maintainers, dist.signatures
// and dist.attestations; without either of the first two marks of a full
// document, an absent attestation says nothing, so provenance is unknown.
func (v *npmVersion) facts() sandbox.VersionFacts {
	f := sandbox.VersionFacts{
		Provenance:     Unknown,
		Publisher:      npmPublisher(v.NPMUser),
		InstallScripts: []string{},
		Dependencies:   map[string]string{},
	}
	var att struct {
		Provenance json.RawMessage `json:"provenance"`
	}
	switch {
	case present(v.Dist.Attestations) && json.Unmarshal(v.Dist.Attestations, &att) == nil && present(att.Provenance):
		f.Provenance = ProvenancePresent
	case present(v.NPMUser) || present(v.Dist.Signatures):
		f.Provenance = ProvenanceAbsent
	}
	for _, s := range installScriptNames {
		if present(v.Scripts[s]) {
			f.InstallScripts = append(f.InstallScripts, s)
		}
	}
	for _, name := range firstKeys(v.Dependencies, maxDependencies) {
		var spec string
		if json.Unmarshal(v.Dependencies[name], &spec) != nil {
			spec = string(v.Dependencies[name])
		}
		f.Dependencies[clip(name, 214)] = clip(spec, 200)
	}
	Compare(&f, "", nil)
	return f
}

// npmPublisher is _npmUser.trustedPublisher.id (the CI identity npm's trusted publishing
// took the version from), shown as "oidc publisher: <id>" (the words we render never call a
// package trusted), else _npmUser.name; never an e-mail address.
func npmPublisher(raw json.RawMessage) string {
	var u struct {
		Name             string `json:"name"`
		TrustedPublisher struct {
			ID string `json:"id"`
		} `json:"trustedPublisher"`
	}
	if !present(raw) || json.Unmarshal(raw, &u) != nil {
		return Unknown
	}
	if id := strings.TrimSpace(u.TrustedPublisher.ID); id != "" {
		return clip("oidc publisher: "+id, 100)
	}
	if name := strings.TrimSpace(u.Name); name != "" && !strings.Contains(name, "@") {
		return clip(name, 100)
	}
	return Unknown
}

func firstKeys[V any](m map[string]V, n int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys[:min(n, len(keys))]
}

// Compare sets cur's Previous and Signals against the facts of the version
// observed before it (prev nil: none). A signal needs both sides known:
// provenance is lost only when prev had it and cur's registry document was
// full enough to say it is absent; the publisher changed only when both are
// named.
func Compare(cur *sandbox.VersionFacts, previous string, prev *sandbox.VersionFacts) {
	cur.Previous, cur.Signals = "", []string{}
	if prev != nil {
		cur.Previous = previous
		cur.Signals = append(cur.Signals, changes(cur, prev)...)
	}
	if len(cur.InstallScripts) > 0 && !slices.Contains(cur.Signals, SignalInstallScriptsAdded) {
		cur.Signals = append(cur.Signals, SignalInstallScripts)
	}
}

func changes(cur, prev *sandbox.VersionFacts) []string {
	var s []string
	if prev.Provenance == ProvenancePresent && cur.Provenance == ProvenanceAbsent {
		s = append(s, SignalProvenanceLost)
	}
	if prev.Publisher != Unknown && cur.Publisher != Unknown && prev.Publisher != "" && cur.Publisher != "" && prev.Publisher != cur.Publisher {
		s = append(s, SignalPublisherChanged)
	}
	for _, sc := range cur.InstallScripts {
		if !slices.Contains(prev.InstallScripts, sc) {
			s = append(s, SignalInstallScriptsAdded)
			break
		}
	}
	var added, changed bool
	for name, spec := range cur.Dependencies {
		old, ok := prev.Dependencies[name]
		added = added || !ok
		changed = changed || (ok && old != spec)
	}
	if added {
		s = append(s, SignalNewDependencies)
	}
	if changed {
		s = append(s, SignalDependencySpecsChanged)
	}
	return s
}
