package log

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/log/format"
)

// memTree is an in-memory tlog store, independent of our tiles.
type memTree struct{ stored []tlog.Hash }

func (m *memTree) add(entry []byte) {
	hs, err := tlog.StoredHashes(int64(len(m.leaves())), entry, m)
	if err != nil {
		panic(err)
	}
	m.stored = append(m.stored, hs...)
}

func (m *memTree) leaves() []struct{} {
	// Count records: StoredHashCount is monotone, so search it.
	n := 0
	for tlog.StoredHashCount(int64(n+1)) <= int64(len(m.stored)) {
		n++
	}
	return make([]struct{}, n)
}

func (m *memTree) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		out[i] = m.stored[x]
	}
	return out, nil
}

func hashSlices(p [][32]byte) [][]byte {
	out := make([][]byte, len(p))
	for i := range p {
		out[i] = p[i][:]
	}
	return out
}

// buildRandomly appends n test entries in random-sized batches and returns
// the log and the leaf hashes computed here.
func buildRandomly(t *testing.T, n int, seed uint64) (*Log, [][32]byte) {
	l := openTest(t, testConfig(t.TempDir()))
	rng := rand.New(rand.NewPCG(seed, seed))
	var leaves [][32]byte
	for len(leaves) < n {
		k := min(n-len(leaves), 1+rng.IntN(300))
		first := appendN(t, l, len(leaves), k)
		if first != uint64(len(leaves)) {
			t.Fatalf("first %d, want %d", first, len(leaves))
		}
		base := len(leaves)
		for i := range k {
			leaves = append(leaves, naiveLeaf(testEntry(base+i).Label))
		}
		if got, want := l.Latest().Root, naiveRoot(leaves); got != want {
			t.Fatalf("head root at %d: %x, want %x", len(leaves), got, want)
		}
	}
	return l, leaves
}

func TestRootsAgainstNaive(t *testing.T) {
	l, leaves := buildRandomly(t, 1000, 1)
	for n := 0; n <= 1000; n++ {
		got, err := l.RootAt(uint64(n))
		if err != nil {
			t.Fatalf("RootAt(%d): %v", n, err)
		}
		if want := naiveRoot(leaves[:n]); got != want {
			t.Fatalf("RootAt(%d) = %x, want %x", n, got, want)
		}
	}
}

// TestProofsAgainstIndependentCode checks every inclusion and consistency
// proof for sizes 1..300 against tlog's in-memory prover and verifies each
// with transparency-dev/merkle.
func TestProofsAgainstIndependentCode(t *testing.T) {
	const n = 300
	l, leaves := buildRandomly(t, n, 2)
	mem := &memTree{}
	for i := range n {
		mem.add(testEntry(i).Label)
	}
	h := rfc6962.DefaultHasher
	roots := make([][32]byte, n+1)
	for size := range roots {
		roots[size] = naiveRoot(leaves[:size])
	}
	for size := 1; size <= n; size++ {
		root := roots[size]
		for i := 0; i < size; i++ {
			got, err := l.InclusionProof(uint64(i), uint64(size))
			if err != nil {
				t.Fatalf("InclusionProof(%d, %d): %v", i, size, err)
			}
			want, _ := tlog.ProveRecord(int64(size), int64(i), mem)
			if !equalProof(got, want) {
				t.Fatalf("InclusionProof(%d, %d) differs from tlog's", i, size)
			}
			if err := proof.VerifyInclusion(h, uint64(i), uint64(size), leaves[i][:], hashSlices(got), root[:]); err != nil {
				t.Fatalf("VerifyInclusion(%d, %d): %v", i, size, err)
			}
		}
		for first := 1; first <= size; first++ {
			got, err := l.ConsistencyProof(uint64(first), uint64(size))
			if err != nil {
				t.Fatalf("ConsistencyProof(%d, %d): %v", first, size, err)
			}
			want, _ := tlog.ProveTree(int64(size), int64(first), mem)
			if first < size && !equalProof(got, want) {
				t.Fatalf("ConsistencyProof(%d, %d) differs from tlog's", first, size)
			}
			old := roots[first]
			if err := proof.VerifyConsistency(h, uint64(first), uint64(size), hashSlices(got), old[:], root[:]); err != nil {
				t.Fatalf("VerifyConsistency(%d, %d): %v", first, size, err)
			}
		}
	}
	var re *RangeError
	for _, c := range [][2]uint64{{0, 0}, {5, 5}, {0, n + 1}} {
		if _, err := l.InclusionProof(c[0], c[1]); err == nil {
			t.Errorf("InclusionProof(%d, %d) did not refuse", c[0], c[1])
		}
	}
	if _, err := l.ConsistencyProof(5, 4); !errorsAs(err, &re) {
		t.Errorf("ConsistencyProof(5, 4): %v", err)
	}
	if p, err := l.ConsistencyProof(0, 7); err != nil || len(p) != 0 {
		t.Errorf("ConsistencyProof(0, 7) = %v, %v", p, err)
	}
}

func equalProof(a [][32]byte, b []tlog.Hash) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// tileClient reads our C2SP tiles through the log's HashTile, for tlog's
// TileHashReader, which checks every tile it reads against the tree hash.
type tileClient struct{ l *Log }

func (c tileClient) Height() int { return tileHeight }
func (c tileClient) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, tl := range tiles {
		b, err := c.l.HashTile(uint64(tl.L), uint64(tl.N), tl.W)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}
func (c tileClient) SaveTiles([]tlog.Tile, [][]byte) {}

// TestTilesReadByTlogClient: tlog's own tile client, given only the signed
// checkpoint, reads our hash tiles and entry bundles and proves every record.
func TestTilesReadByTlogClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 70,000-leaf log; run without -short")
	}
	l := openTest(t, testConfig(t.TempDir()))
	for done := 0; done < 70000; done += 10000 {
		appendN(t, l, done, 10000)
	}
	v, _ := format.NewVerifier(testOrigin, testKey().Public().(ed25519PublicKey))
	cp, err := format.ParseCheckpoint(l.Latest().Checkpoint, v)
	if err != nil {
		t.Fatal(err)
	}
	tree := tlog.Tree{N: int64(cp.Size), Hash: cp.Root}
	r := tlog.TileHashReader(tree, tileClient{l})
	// The C2SP tile vector: 70,000 leaves → these partial widths.
	for _, c := range []struct {
		level, n uint64
		w        int
	}{{0, 273, 112}, {1, 1, 17}, {2, 0, 1}} {
		if _, err := l.HashTile(c.level, c.n, c.w); err != nil {
			t.Fatalf("tile %d/%d.p/%d: %v", c.level, c.n, c.w, err)
		}
		if _, err := l.HashTile(c.level, c.n, c.w+1); err == nil {
			t.Fatalf("tile %d/%d.p/%d served beyond the tree", c.level, c.n, c.w+1)
		}
	}
	for bundle := uint64(0); bundle*256 < cp.Size; bundle++ {
		w := int(min(256, cp.Size-bundle*256))
		data, err := l.EntryBundle(bundle, w)
		if err != nil {
			t.Fatalf("bundle %d: %v", bundle, err)
		}
		for i := uint64(0); len(data) > 0; i++ {
			n := int(binary.BigEndian.Uint16(data))
			entry := data[2 : 2+n]
			data = data[2+n:]
			index := bundle*256 + i
			if !bytes.Equal(entry, testEntry(int(index)).Label) {
				t.Fatalf("bundle entry %d differs", index)
			}
			if index%97 != 0 && index != cp.Size-1 {
				continue // every 97th record proven, to keep the test short
			}
			p, err := tlog.ProveRecord(tree.N, int64(index), r)
			if err != nil {
				t.Fatalf("ProveRecord(%d) via tiles: %v", index, err)
			}
			if err := tlog.CheckRecord(p, tree.N, tree.Hash, int64(index), tlog.RecordHash(entry)); err != nil {
				t.Fatalf("CheckRecord(%d): %v", index, err)
			}
		}
	}
	// A proof reads at most two stored tiles per tile level (the one on
	// the leaf's path and the partial edge tile); 70,000 leaves have three.
	var reads int
	counting := hashReader{get: func(level int, n uint64) ([]byte, io.Closer, error) {
		reads++
		return l.hashes().get(level, n)
	}}
	for _, index := range []int64{0, 1, 255, 256, 4097, 65535, 65536, 69999} {
		reads = 0
		if _, err := tlog.ProveRecord(tree.N, index, counting); err != nil {
			t.Fatal(err)
		}
		if reads > 2*3 {
			t.Errorf("proof of %d read %d tiles", index, reads)
		}
	}
	th, err := tlog.TreeHash(tree.N, r)
	if err != nil || th != tree.Hash {
		t.Fatalf("TreeHash via tiles: %v", err)
	}
}
