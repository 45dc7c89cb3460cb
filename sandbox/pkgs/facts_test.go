package pkgs_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/pkgs"
)

func facts(t *testing.T, file, version string) sandbox.VersionFacts {
	t.Helper()
	doc, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := pkgs.PackumentFacts(doc, version)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestVersionFacts runs over the recorded packuments: the mirror's (no
// _npmUser, no signatures, no attestations) and the hand-written full one.
func TestVersionFacts(t *testing.T) {
	tests := []struct {
		file, version, previous string
		provenance, publisher   string
		scripts                 []string
		deps                    map[string]string
		signals                 []string
	}{
		{"npm-server-memory.json", "2026.8.31", "2026.7.4", "unknown", "unknown", nil,
			map[string]string{"@modelcontextprotocol/sdk": "^1.30.0"}, []string{"dependency-specs-changed"}},
		{"npm-server-memory.json", "2025.11.25", "0.6.2", "unknown", "unknown", nil,
			map[string]string{"@modelcontextprotocol/sdk": "^1.19.1"}, []string{"dependency-specs-changed"}},
		{"npm-server-memory.json", "0.6.2", "", "unknown", "unknown", nil,
			map[string]string{"@modelcontextprotocol/sdk": "1.0.1"}, nil},
		{"npm-full-shape.json", "1.0.0", "", "present", "oidc publisher: github", nil,
			map[string]string{"@modelcontextprotocol/sdk": "^1.0.0"}, nil},
		{"npm-full-shape.json", "1.1.0", "1.0.0", "present", "oidc publisher: github", nil,
			map[string]string{"@modelcontextprotocol/sdk": "^1.2.0"}, []string{"dependency-specs-changed"}},
		{"npm-full-shape.json", "1.2.0", "1.1.0", "absent", "mallory", []string{"postinstall"},
			map[string]string{"@modelcontextprotocol/sdk": "^1.2.0", "helper-lib": "2.0.0"},
			[]string{"provenance-lost", "publisher-changed", "install-scripts-added", "new-dependencies"}},
		{"npm-full-shape.json", "1.3.0", "1.2.0", "absent", "mallory", []string{"postinstall"},
			map[string]string{"@modelcontextprotocol/sdk": "^1.2.0", "helper-lib": "2.0.0"}, []string{"install-scripts"}},
		// Across the two registries' shapes: a full document before a
		// stripped one is never "provenance lost", nor a publisher change.
		{"npm-server-memory.json", "2026.7.4", "full:1.1.0", "unknown", "unknown", nil,
			map[string]string{"@modelcontextprotocol/sdk": "^1.29.0"}, []string{"dependency-specs-changed"}},
	}
	for _, tt := range tests {
		cur := facts(t, tt.file, tt.version)
		if tt.previous != "" {
			prevFile, prevVersion := tt.file, tt.previous
			if v, ok := strings.CutPrefix(tt.previous, "full:"); ok {
				prevFile, prevVersion = "npm-full-shape.json", v
			}
			prev := facts(t, prevFile, prevVersion)
			pkgs.Compare(&cur, prevVersion, &prev)
		}
		name := tt.file + " " + tt.version
		if cur.Provenance != tt.provenance || cur.Publisher != tt.publisher {
			t.Errorf("%s: provenance %q publisher %q, want %q %q", name, cur.Provenance, cur.Publisher, tt.provenance, tt.publisher)
		}
		if !slices.Equal(cur.InstallScripts, orEmpty(tt.scripts)) || !mapsEqual(cur.Dependencies, tt.deps) {
			t.Errorf("%s: scripts %v deps %v, want %v %v", name, cur.InstallScripts, cur.Dependencies, tt.scripts, tt.deps)
		}
		if !slices.Equal(cur.Signals, orEmpty(tt.signals)) {
			t.Errorf("%s against %s: signals %v, want %v", name, tt.previous, cur.Signals, tt.signals)
		}
		if strings.Contains(cur.Publisher, "@") || slices.Contains(cur.Signals, "provenance-lost") && tt.file == "npm-server-memory.json" {
			t.Errorf("%s: publisher %q signals %v", name, cur.Publisher, cur.Signals)
		}
		if tt.previous != "" && cur.Previous == "" {
			t.Errorf("%s: Previous not set", name)
		}
	}
}

func TestCompareNeedsBothSidesKnown(t *testing.T) {
	known := sandbox.VersionFacts{Provenance: "present", Publisher: "alice", InstallScripts: []string{}, Dependencies: map[string]string{}}
	for _, cur := range []sandbox.VersionFacts{
		{Provenance: "unknown", Publisher: "unknown"},
		{Provenance: "present", Publisher: "unknown"},
	} {
		pkgs.Compare(&cur, "1.0.0", &known)
		if len(cur.Signals) != 0 {
			t.Errorf("%+v against a known previous: signals %v", cur, cur.Signals)
		}
	}
	cur := sandbox.VersionFacts{Provenance: "absent", Publisher: "bob"}
	pkgs.Compare(&cur, "1.0.0", &known)
	if !slices.Equal(cur.Signals, []string{"provenance-lost", "publisher-changed"}) {
		t.Errorf("signals %v", cur.Signals)
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
