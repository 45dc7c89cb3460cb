package crawl

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/log/awr"
)

// TestSignFittingWithholdsReasonDetails: a label too big only because of
// its reasons' details (nothing else to shorten) is still signed, under
// MaxLabelBytes, each reason keeping its code with a fixed detail.
func TestSignFittingWithholdsReasonDetails(t *testing.T) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	now := time.Date(2026, 11, 2, 3, 0, 0, 0, time.UTC)
	c := &Crawler{key: key, did: awr.DIDKey(key.Public().(ed25519.PublicKey)), regURN: "urn:awr:mtl:1:registry:r.example",
		cfg: Config{Now: func() time.Time { return now }}}
	j := &crawlJob{c: c}
	tg := registry.Target{Name: "io.example/t", Transport: "streamable-http", Endpoint: "https://t.example/mcp"}
	subj, err := buildSubject(tg, c.regURN, []any{})
	if err != nil || subj.refusal == nil {
		t.Fatalf("subject %v, %v; want a refused empty set", subj, err)
	}
	in := baseInput(&settings{regURN: c.regURN}, tg, subj, now)
	code := in.Reasons[0].Code
	in.Reasons[0].Detail = strings.Repeat("d", 40000)
	p := &prepared{prev: &state.Observation{TargetID: "t1"}}
	if _, err := j.issue(p, awr.MethodObservation, in); err != nil {
		t.Fatalf("issuing: %v", err)
	}
	v, err := awr.VerifyLabel(p.entries[0].Label)
	if err != nil {
		t.Fatal(err)
	}
	reasons := v.Document["credentialSubject"].(map[string]any)["mcpTrustLabel"].(map[string]any)["reasons"].([]any)
	r := reasons[0].(map[string]any)
	if len(p.entries[0].Label) > MaxLabelBytes || r["code"] != code || r["detail"] != detailWithheld {
		t.Errorf("label of %d bytes with reason %v", len(p.entries[0].Label), r)
	}
}

func TestStoredInstructions(t *testing.T) {
	s := strings.Repeat("é", 100)
	for per, want := range map[int]int{8: 10, 9: 10, 198: 200, 199: 200, 500: 200} {
		kept, clipped := storedInstructions(&s, per)
		if len(*kept) != want || clipped != (want < len(s)) {
			t.Errorf("per-text %d: kept %d bytes (clipped %v), want %d", per, len(*kept), clipped, want)
		}
	}
	if kept, clipped := storedInstructions(nil, 8); kept != nil || clipped {
		t.Error("no instructions became some")
	}
}
