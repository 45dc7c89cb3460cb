package mtl

import (
	"errors"
	"strings"
	"testing"

	"github.com/histor-observer/histor/log/canon"
)

// FuzzDigestListResult checks that reading and digesting never panics, that
// every refusal carries a code, and that a digest is well formed and stable
// under re-serialising the normalised tool set as a bare array.
func FuzzDigestListResult(f *testing.F) {
	f.Add(readVector(f, "pass-01-tools.json"))
	for _, s := range []string{
		`[]`, `[{"name":"a"}]`, `[{"name":"a"},{"name":"a"}]`, `[{"name":"a","inputSchema":{"m":0.5}}]`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"\ud83d\ude00"},{"name":"\uffff"}]}}`,
		`[{"name":"a","annotations":{"w":1e3},"outputSchema":{}}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tools, err := ToolSetFromListResult(b)
		if err != nil {
			if Code(err) == "" {
				t.Fatalf("refusal without a code: %v", err)
			}
			return
		}
		sri, err := Digest(tools)
		if err != nil {
			var r *Refusal
			var ce *canon.Error
			if !errors.As(err, &r) && !errors.As(err, &ce) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if !strings.HasPrefix(sri, "sha256-") || len(sri) != 51 {
			t.Fatalf("malformed SRI %q", sri)
		}
		set, err := CanonicalToolSet(tools)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DigestListResult(set)
		if err != nil || again != sri {
			t.Fatalf("normalised set %s digests to %s, %v; want %s", set, again, err, sri)
		}
	})
}
