package sandbox_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/sandbox"
)

// TestCensusKeepsIncompleteInDenominator mirrors HISTOR's own census test:
// one package with calls 2 of 4 and startup complete counts incomplete,
// its tools counted; an unobserved package stays in the denominator; two
// targets naming one package count once.
func TestCensusKeepsIncompleteInDenominator(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	partial := &sandbox.Observation{Status: sandbox.StatusOK,
		Install:   sandbox.InstallRecord{Status: "ok"},
		Calls:     sandbox.Coverage{Total: 4, Successful: 2},
		Behaviour: sandbox.Behaviour{Observer: "histor-gvisor-trace/1", Startup: sandbox.Phase{Complete: true}}}
	full := &sandbox.Observation{Status: sandbox.StatusOK,
		Install:   sandbox.InstallRecord{Status: "ok"},
		Calls:     sandbox.Coverage{Total: 1, Successful: 1, Complete: true},
		Behaviour: sandbox.Behaviour{Complete: true, Startup: sandbox.Phase{Complete: true}, Calls: sandbox.Phase{Complete: true}}}
	rows := []sandbox.CensusRow{
		{Package: "npm:@a/mem", Version: "1.0.0", LastObserved: now.Add(-time.Hour), Observation: partial, EvidenceSHA256: "aa"},
		{Package: "npm:@a/mem", Version: "0.9.0", LastObserved: now.Add(-72 * time.Hour), Observation: full, EvidenceSHA256: "bb"},
		{Package: "npm:b", Version: "2.0.0", LastObserved: now.Add(-2 * time.Hour), Observation: full, EvidenceSHA256: "cc"},
		{Package: "pypi:never"},
	}
	c, err := sandbox.Census(rows, "did:key:zX", now)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"targetRows": 4, "packages": 3, "completed": 1, "incomplete": 2, "staleOrUnobserved": 1,
		"toolsAdvertised": 5, "toolsSuccessfullyCalled": 3, "freshnessWindowSeconds": 172800}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("%s = %v, want %d", k, c[k], v)
		}
	}
	ph := c["phases"].(map[string]map[string]any)
	if ph["startup"]["complete"] != int64(2) || ph["calls"]["incomplete"] != int64(2) || ph["installScripts"]["complete"] != int64(2) {
		t.Errorf("phases %v", ph)
	}
	m := c["manifest"].([]any)
	first := m[0].(map[string]any)
	if len(m) != 3 || first["package"] != "npm:@a/mem" || first["version"] != "1.0.0" || first["complete"] != false || first["ageSeconds"] != int64(3600) {
		t.Fatalf("manifest %v", m)
	}
	if never := m[2].(map[string]any); never["lastObserved"] != nil || never["fresh"] != false || never["ageSeconds"] != nil {
		t.Errorf("unobserved row %v", never)
	}
	b, _ := canon.Marshal(m)
	sum := sha256.Sum256(b)
	if c["manifestSha256"] != hex.EncodeToString(sum[:]) {
		t.Error("manifestSha256 is not the SHA-256 of the canonical manifest")
	}
	if w := awr.ForbiddenWord(c["methodology"].(string)); w != "" {
		t.Errorf("methodology uses %q", w)
	}
}
