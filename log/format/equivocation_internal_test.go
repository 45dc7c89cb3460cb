package format

import (
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// zeroHashes serves a hash for every stored index, so tlog.ProveTree shows how many hashes a
// consistency proof takes without a tree behind it.
type zeroHashes struct{}

func (zeroHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	return make([]tlog.Hash, len(indexes)), nil
}

// TestConsistencyProofLen checks the length rule against x/mod's prover, which we did not write.
func TestConsistencyProofLen(t *testing.T) {
	for n := int64(1); n <= 130; n++ {
		for m := int64(1); m <= n; m++ {
			p, err := tlog.ProveTree(n, m, zeroHashes{})
			if err != nil {
				t.Fatal(err)
			}
			if got := consistencyProofLen(uint64(m), uint64(n)); got != len(p) {
				t.Fatalf("consistencyProofLen(%d, %d) = %d, tlog proves with %d", m, n, got, len(p))
			}
		}
	}
	big := []struct{ m, n uint64 }{{1 << 40, 1<<40 + 1}, {3, 1 << 62}, {1<<63 - 1, 1 << 63}}
	for _, c := range big {
		if got := consistencyProofLen(c.m, c.n); got < 1 || got > MaxProofHashes {
			t.Errorf("consistencyProofLen(%d, %d) = %d", c.m, c.n, got)
		}
	}
	if consistencyProofLen(0, 9) != 0 {
		t.Error("a proof from the empty tree has hashes")
	}
}
