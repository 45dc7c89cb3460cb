package receipt

import (
	"encoding/json"
	"math"
	"testing"
)

// TestPyJSON: the outputs are Python 3's json.dumps(v, sort_keys=True,
// ensure_ascii=False) for the same values, recorded from Python.
func TestPyJSON(t *testing.T) {
	for _, tc := range []struct {
		v    any
		sep  Separators
		want string
	}{
		{0.0, Compact, "0.0"},
		{1e16, Compact, "1e+16"},
		{1e15, Compact, "1000000000000000.0"},
		{0.0001, Compact, "0.0001"},
		{1e-05, Compact, "1e-05"},
		{1.5e-07, Compact, "1.5e-07"},
		{123.456, Compact, "123.456"},
		{math.Copysign(0, -1), Compact, "-0.0"},
		{2.5e20, Compact, "2.5e+20"},
		{1.0 / 3, Compact, "0.3333333333333333"},
		{json.Number("1.50"), Compact, "1.5"},
		{json.Number("-0"), Compact, "0"},
		{json.Number("12345678901234567890123"), Compact, "12345678901234567890123"},
		{map[string]any{"b": []any{"\x01\u2028é\"\\", 1}, "a": map[string]any{"z": nil, "y": true}}, PyDefault,
			`{"a": {"y": true, "z": null}, "b": ["\u0001` + "\u2028" + `é\"\\", 1]}`},
		{map[string]any{"b": []any{1, 2}, "a": map[string]any{}}, PyDefault, `{"a": {}, "b": [1, 2]}`},
		{map[string]any{"b": []any{1, 2}, "a": map[string]any{}}, Compact, `{"a":{},"b":[1,2]}`},
	} {
		got, err := PyJSON(tc.v, tc.sep)
		if err != nil || string(got) != tc.want {
			t.Errorf("PyJSON(%#v) = %s, %v; want %s", tc.v, got, err, tc.want)
		}
	}
	if _, err := PyJSON(struct{}{}, Compact); err == nil {
		t.Error("a struct was encoded")
	}
}

// TestHubReceiptCanonical is the hub's v1 string for a free call.
func TestHubReceiptCanonical(t *testing.T) {
	got := HubReceiptCanonical(HubReceipt{Nonce: "0xab", ProductID: "histor", CapabilityID: "histor.check@v1", Timestamp: "2026-09-23T09:13:04Z", Success: true})
	want := "nonce:0xab|product_id:histor|capability_id:histor.check@v1|price_usd:0.0|timestamp:2026-09-23T09:13:04Z|success:1|latency_ms:0"
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}
