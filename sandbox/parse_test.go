package sandbox_test

import (
	"encoding/json"
	"testing"

	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/sandbox"
)

// TestObservationRoundTrip: tools travel from worker to node through
// encoding/json and keep their digest, and a number MTL/1 refuses still
// reads MTL-NUM-001 at the node.
func TestObservationRoundTrip(t *testing.T) {
	sent := `[{"name":"b","description":"x","inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":9007199254740991}}}},{"name":"a"}]`
	tools, err := canon.ParseDeferringNumbers([]byte(sent), canon.Limits{MaxDepth: 64, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	obs := sandbox.Observation{Type: sandbox.Type, Status: sandbox.StatusOK, Tools: tools.([]any)}
	b, err := json.Marshal(obs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sandbox.ParseObservation(b)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := mtl.CanonicalToolSet(tools.([]any))
	have, err := mtl.CanonicalToolSet(got.Tools)
	if err != nil || mtl.SRI(have) != mtl.SRI(want) {
		t.Fatalf("digest moved in transit: %v", err)
	}

	refused, _ := canon.ParseDeferringNumbers([]byte(`[{"name":"a","inputSchema":{"minimum":2340.0}}]`), canon.Limits{MaxDepth: 64, MaxBytes: 1 << 20})
	b, err = json.Marshal(sandbox.Observation{Type: sandbox.Type, Tools: refused.([]any)})
	if err != nil {
		t.Fatal(err)
	}
	got, err = sandbox.ParseObservation(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mtl.CanonicalToolSet(got.Tools); err == nil || !canon.IsNumberRefusal(err) && mtl.Code(err) != "MTL-NUM-001" {
		t.Fatalf("a refused number lost its refusal in transit: %v", err)
	}
	// A number no float64 holds, in serverInfo and in a tool, still reads.
	huge := []byte(`{"type":"histor.package-observation/v1","status":"ok","serverInfo":{"x":1e400},"tools":[{"name":"a","inputSchema":{"maximum":1e400}}]}`)
	got, err = sandbox.ParseObservation(huge)
	if err != nil {
		t.Fatalf("an observation with 1e400 is unreadable: %v", err)
	}
	if _, err := mtl.CanonicalToolSet(got.Tools); mtl.Code(err) != "MTL-NUM-001" && !canon.IsNumberRefusal(err) {
		t.Errorf("1e400 in a tool: %v, want MTL-NUM-001", err)
	}
	if _, err := sandbox.ParseObservation([]byte(`{"type":"other"}`)); err == nil {
		t.Error("accepted another type")
	}
}
