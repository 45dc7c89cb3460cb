package mtl_test

import (
	"strings"
	"testing"

	"github.com/histor-observer/histor/log/mtl"
)

// TestValidSRI: what SRI writes is accepted, and every other spelling of
// a digest (another alphabet, no padding, set padding bits, another
// length or algorithm) is refused.
func TestValidSRI(t *testing.T) {
	good := mtl.SRI([]byte("x"))
	if !mtl.ValidSRI(good) {
		t.Fatalf("%s refused", good)
	}
	// The 43rd base64 character carries 2 unused bits: "A" has them zero,
	// "B" sets one, so "…B=" decodes loosely to the same bytes as "…A=".
	zeroBits := "sha256-" + strings.Repeat("A", 43) + "="
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{zeroBits, true},
		{"sha256-" + strings.Repeat("A", 42) + "B=", false},
		{strings.TrimSuffix(good, "="), false},
		{strings.Replace(good, "sha256-", "sha384-", 1), false},
		{strings.Replace(good, "sha256-", "SHA256-", 1), false},
		{"sha256-" + strings.Repeat("_", 43) + "=", false},
		{"sha256-" + strings.Repeat("A", 44), false},
		{"sha256-" + strings.Repeat("A", 42) + "==", false},
		{good + " ", false},
		{"", false},
	} {
		if got := mtl.ValidSRI(tc.s); got != tc.want {
			t.Errorf("ValidSRI(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}
