package observer

import (
	"strings"
	"testing"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/sandbox"
)

// TestSummaryWords renders the summary of observations in every status and
// shape and checks it for the words nothing histor renders may use.
func TestSummaryWords(t *testing.T) {
	ph := sandbox.Phase{Network: []sandbox.NetworkAttempt{{Protocol: "https", Canary: true}},
		Placeholders: []sandbox.PlaceholderUse{{Name: "API_KEY", Where: "tool get-env"}}, Decoys: []sandbox.DecoyRead{{Path: "/home/histor/.ssh/id_ed25519"}},
		IncompleteReasons: []string{"trace-truncated"}}
	for _, o := range []sandbox.Observation{
		{Package: "npm:a@1", Status: sandbox.StatusOK, Tools: []any{map[string]any{"name": "t"}}, ToolSetDigest: "sha256-x",
			Calls: sandbox.Coverage{Complete: true}, Behaviour: sandbox.Behaviour{Startup: sandbox.Phase{Complete: true}, Calls: ph, Complete: false},
			VersionFacts: &sandbox.VersionFacts{Provenance: "unknown", Publisher: "unknown", Signals: []string{"install-scripts"}}},
		{Name: "b", Status: sandbox.StatusExited, Detail: "memory limit", Install: sandbox.InstallRecord{ScriptPackages: []string{"x"}, Scripts: &sandbox.Phase{TimedOut: true}}},
		{Name: "c", Status: sandbox.StatusOK, DigestError: "MTL-NUM-001", Behaviour: sandbox.Behaviour{Complete: true}},
	} {
		var b strings.Builder
		if err := WriteSummary(&b, &o); err != nil {
			t.Fatal(err)
		}
		for _, s := range o.Stages {
			b.WriteString(ProgressLine(s))
		}
		if w := awr.ForbiddenWord(b.String()); w != "" {
			t.Errorf("summary uses %q:\n%s", w, b.String())
		}
		if !strings.Contains(b.String(), "status       "+string(o.Status)) {
			t.Errorf("no status line:\n%s", b.String())
		}
	}
}
