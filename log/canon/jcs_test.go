package canon

import (
	"bytes"
	"testing"

	"github.com/gowebpki/jcs"
)

// TestCrossCheckGowebpkiJCS compares our canonical bytes with a second
// independent RFC 8785 implementation, gowebpki/jcs (Go), on the same
// documents the Node.js cross-check uses. It needs nothing outside the module,
// so it runs in -short mode too.
func TestCrossCheckGowebpkiJCS(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 300
	}
	for i, in := range crossCheckInputs(n) {
		got, err := Canonicalize([]byte(in))
		if err != nil {
			t.Errorf("input %d %q: %v", i, in, err)
			continue
		}
		want, err := jcs.Transform([]byte(in))
		if err != nil {
			t.Fatalf("input %d %q: gowebpki/jcs refused it: %v", i, in, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("input %d %q:\nours            %q\ngowebpki/jcs    %q", i, in, got, want)
		}
	}
}
