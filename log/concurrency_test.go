package log

import (
	"bytes"
	"sync"
	"testing"
)

// TestConcurrentAppends: many goroutines append at once; every entry gets
// its own index, and the tree over the stored entries is re-verified.
func TestConcurrentAppends(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.MaxBatch = 64
	l := openTest(t, cfg)
	const workers, each = 64, 20
	firsts := make([][]uint64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				n := 1 + i%3
				first := appendN(t, l, (w*each+i)*3, n)
				for j := range n {
					firsts[w] = append(firsts[w], first+uint64(j))
				}
			}
		})
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for w := range workers {
		for _, i := range firsts[w] {
			if seen[i] {
				t.Fatalf("index %d given twice", i)
			}
			seen[i] = true
		}
	}
	size := l.Size()
	if uint64(len(seen)) != size {
		t.Fatalf("%d indexes for size %d", len(seen), size)
	}
	entries, err := l.Entries(0, size)
	if err != nil {
		t.Fatal(err)
	}
	leaves := make([][32]byte, len(entries))
	for i, e := range entries {
		leaves[i] = naiveLeaf(e)
		if j := bytes.Index(e, []byte(`"urn:uuid:`)); j < 0 {
			t.Fatalf("entry %d: %q", i, e)
		}
	}
	if got := l.Latest().Root; got != naiveRoot(leaves) {
		t.Fatalf("root %x, entries give %x", got, naiveRoot(leaves))
	}
	// Any earlier head is still a prefix of the final tree.
	for _, old := range []uint64{1, size / 3, size - 1} {
		p, err := l.ConsistencyProof(old, size)
		if err != nil || (old != size && len(p) == 0) {
			t.Fatalf("ConsistencyProof(%d, %d): %v", old, size, err)
		}
	}
	requireFsckClean(t, l, dir, cfg)
}
