package format_test

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/log/format"
)

// TestInclusionAgainstTlog checks every inclusion proof x/mod's tlog makes in trees of 1..40
// leaves, and that changing any one of its hashes, dropping one, or adding one is refused.
func TestInclusionAgainstTlog(t *testing.T) {
	tr := newTestTree(t, 40)
	for size := int64(1); size <= 40; size++ {
		root := tr.root(t, size)
		for i := int64(0); i < size; i++ {
			p, err := tlog.ProveRecord(size, i, tr)
			if err != nil {
				t.Fatal(err)
			}
			leaf := tr.stored[tlog.StoredHashIndex(0, i)]
			proof := hashes(p)
			if err := format.VerifyInclusion(uint64(i), uint64(size), leaf, proof, root); err != nil {
				t.Fatalf("leaf %d of %d: %v", i, size, err)
			}
			for _, bad := range mangledProofs(proof) {
				if format.VerifyInclusion(uint64(i), uint64(size), leaf, bad, root) == nil {
					t.Fatalf("leaf %d of %d: a mangled proof verified", i, size)
				}
			}
			if format.VerifyInclusion(uint64(i), uint64(size), root, proof, root) == nil && size > 1 {
				t.Fatalf("leaf %d of %d: the root verified as the leaf", i, size)
			}
		}
		if format.VerifyInclusion(uint64(size), uint64(size), format.LeafHash(nil), nil, root) == nil {
			t.Fatalf("an index beyond the tree verified at size %d", size)
		}
	}
}

// TestConsistencyAgainstTlog does the same for consistency proofs between all sizes ≤ 40.
func TestConsistencyAgainstTlog(t *testing.T) {
	tr := newTestTree(t, 40)
	for n := int64(1); n <= 40; n++ {
		for m := int64(1); m <= n; m++ {
			p, err := tlog.ProveTree(n, m, tr)
			if err != nil {
				t.Fatal(err)
			}
			proof := hashes(p)
			r1, r2 := tr.root(t, m), tr.root(t, n)
			if err := format.VerifyConsistency(uint64(m), uint64(n), proof, r1, r2); err != nil {
				t.Fatalf("%d → %d: %v", m, n, err)
			}
			for _, bad := range mangledProofs(proof) {
				if format.VerifyConsistency(uint64(m), uint64(n), bad, r1, r2) == nil {
					t.Fatalf("%d → %d: a mangled proof verified", m, n)
				}
			}
			if m < n && format.VerifyConsistency(uint64(m), uint64(n), proof, r2, r1) == nil {
				t.Fatalf("%d → %d: swapped roots verified", m, n)
			}
		}
	}
	empty, r := format.EmptyRoot(), tr.root(t, 3)
	if err := format.VerifyConsistency(0, 3, nil, empty, r); err != nil {
		t.Errorf("0 → 3: %v", err)
	}
	if format.VerifyConsistency(0, 3, nil, r, r) == nil {
		t.Error("a size-0 tree with a non-empty root verified")
	}
	if format.VerifyConsistency(3, 2, nil, r, r) == nil {
		t.Error("a shrinking pair verified")
	}
}

// mangledProofs returns each one-hash change of p: a flipped bit in each hash, each hash
// dropped, and one hash too many.
func mangledProofs(p [][32]byte) [][][32]byte {
	var out [][][32]byte
	for i := range p {
		flipped := append([][32]byte(nil), p...)
		flipped[i][i%32] ^= 1
		dropped := append(append([][32]byte(nil), p[:i]...), p[i+1:]...)
		out = append(out, flipped, dropped)
	}
	return append(out, append(append([][32]byte(nil), p...), [32]byte{}))
}

// TestCheckConsistencyKeepsTheEvidence: a fork comes back as an *InconsistencyError holding
// both signed heads as given and the proof that failed.
func TestCheckConsistencyKeepsTheEvidence(t *testing.T) {
	a, fork := newTestTree(t, 5), newForkedTree(t, 8, 1)
	p, err := tlog.ProveTree(8, 5, fork)
	if err != nil {
		t.Fatal(err)
	}
	small := format.SignedHead{Raw: []byte("small head"), Size: 5, Root: a.root(t, 5)}
	large := format.SignedHead{Raw: []byte("large head"), Size: 8, Root: fork.root(t, 8)}
	cases := []struct {
		name           string
		x, y           format.SignedHead
		proof          [][32]byte
		smaller, large string
	}{
		{"failed proof", small, large, hashes(p), "small head", "large head"},
		{"failed proof, larger first", large, small, hashes(p), "small head", "large head"},
		{"same size, other root", small, format.SignedHead{Raw: []byte("rewritten"), Size: 5, Root: large.Root}, nil, "small head", "rewritten"},
		{"empty tree, other root", format.SignedHead{Raw: []byte("empty"), Root: large.Root}, small, nil, "empty", "small head"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := format.CheckConsistency(c.x, c.y, c.proof)
			var inc *format.InconsistencyError
			if !errors.As(err, &inc) {
				t.Fatalf("got %v, want an *InconsistencyError", err)
			}
			if string(inc.Smaller.Raw) != c.smaller || string(inc.Larger.Raw) != c.large || len(inc.Proof) != len(c.proof) {
				t.Errorf("evidence %q / %q / %d hashes, want %q / %q / %d", inc.Smaller.Raw, inc.Larger.Raw, len(inc.Proof), c.smaller, c.large, len(c.proof))
			}
			if inc.Err == nil || !strings.Contains(err.Error(), "not one tree") {
				t.Errorf("error %q says nothing of why", err)
			}
		})
	}
	ha := newTestTree(t, 8)
	honest := format.SignedHead{Raw: []byte("honest"), Size: 8, Root: ha.root(t, 8)}
	hp, _ := tlog.ProveTree(8, 5, ha)
	if err := format.CheckConsistency(small, honest, hashes(hp)); err != nil {
		t.Errorf("one tree: %v", err)
	}
}

func TestParseHexHashes(t *testing.T) {
	good := strings.Repeat("0a", 32)
	if h, err := format.ParseHexHashes([]string{good, good}); err != nil || len(h) != 2 || h[1][31] != 0x0a {
		t.Fatalf("%v %v", h, err)
	}
	many := make([]string, format.MaxProofHashes+1)
	for i := range many {
		many[i] = good
	}
	for name, in := range map[string][]string{
		"uppercase":  {strings.ToUpper(strings.Repeat("0a", 32))},
		"short":      {good[2:]},
		"long":       {good + "00"},
		"not hex":    {strings.Repeat("zz", 32)},
		"too many":   many,
		"one bad of": {good, "x"},
	} {
		if _, err := format.ParseHexHashes(in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
