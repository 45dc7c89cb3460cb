package canon

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestRFC8785Vectors runs the RFC 8785 authors' test data (see
// testdata/rfc8785/README.md for the changes made for AWR/2's number rule).
func TestRFC8785Vectors(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "rfc8785", "input", "*.json"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no vectors found: %v", err)
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			src := mustRead(t, in)
			want := mustRead(t, filepath.Join("testdata", "rfc8785", "output", name))
			got, err := Canonicalize(src)
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got  %q\nwant %q", got, want)
			}
		})
	}
}

func TestRFC8785RefusedVectors(t *testing.T) {
	refused, err := filepath.Glob(filepath.Join("testdata", "rfc8785", "refused", "*.json"))
	if err != nil || len(refused) == 0 {
		t.Fatalf("no refused vectors found: %v", err)
	}
	for _, in := range refused {
		if _, err := Canonicalize(mustRead(t, in)); !hasCode(err, CodeNonInteger) {
			t.Errorf("%s: %v, want %s", filepath.Base(in), err, CodeNonInteger)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
