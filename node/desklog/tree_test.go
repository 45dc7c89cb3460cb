package desklog

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/log/awr"
)

// memTree is a reference RFC 9162 tree, built by x/mod's tlog.
type memTree struct {
	hashes []tlog.Hash
	leaves [][32]byte
}

func (m *memTree) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		out[i] = m.hashes[x]
	}
	return out, nil
}

func buildMem(t testing.TB, n int) *memTree {
	m := &memTree{}
	for i := range n {
		entry := fmt.Appendf(nil, `{"n":%d}`, i)
		hs, err := tlog.StoredHashes(int64(i), entry, m)
		if err != nil {
			t.Fatal(err)
		}
		m.hashes = append(m.hashes, hs...)
		m.leaves = append(m.leaves, LeafHash(entry))
	}
	return m
}

// inputs are what New takes for a tree of the first n leaves of m.
func (m *memTree) inputs(t testing.TB, n int) (root [32]byte, proof [][32]byte, recent [][32]byte) {
	r, err := tlog.TreeHash(int64(n), m)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tlog.ProveRecord(int64(n), int64(n-1), m)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range p {
		proof = append(proof, [32]byte(h))
	}
	_, rs := Plan(uint64(n))
	return [32]byte(r), proof, m.leaves[rs:n]
}

// TestNewClimbsToRoot builds the picture of every size up to a few
// thousand leaves from a reference tree: it must climb to the root, draw
// at most RecentMax leaves and a few dozen shapes, and refuse any mangled
// hash.
func TestNewClimbsToRoot(t *testing.T) {
	m := buildMem(t, 4200)
	sizes := []int{}
	for n := 1; n <= 70; n++ {
		sizes = append(sizes, n)
	}
	sizes = append(sizes, 255, 256, 257, 1000, 1024, 4095, 4096, 4200)
	for _, n := range sizes {
		root, proof, recent := m.inputs(t, n)
		tr, err := New(uint64(n), root, proof, recent)
		if err != nil {
			t.Fatalf("size %d: %v", n, err)
		}
		if len(tr.Recent) > RecentMax || len(tr.Recent) == 0 {
			t.Errorf("size %d: %d newest leaves drawn", n, len(tr.Recent))
		}
		d := tr.Draw()
		if len(d.Nodes) > 2*RecentMax+64 || len(d.Triangles) != len(tr.Edge) {
			t.Errorf("size %d: %d nodes, %d triangles for %d edge subtrees", n, len(d.Nodes), len(d.Triangles), len(tr.Edge))
		}
		if roots := countClass(d, "root"); roots != 1 {
			t.Errorf("size %d: %d root nodes", n, roots)
		}
		if newest := countClass(d, "leaf newest"); newest != 1 && n > 1 { // one leaf is the root
			t.Errorf("size %d: %d newest leaves", n, newest)
		}
		mangle(t, n, root, proof, recent)
	}
}

func countClass(d *Drawing, class string) int {
	c := 0
	for _, n := range d.Nodes {
		if n.Class == class {
			c++
		}
	}
	return c
}

// mangle flips one bit of each hash New reads in turn and expects ErrRoot.
func mangle(t *testing.T, n int, root [32]byte, proof, recent [][32]byte) {
	t.Helper()
	edge, _ := Plan(uint64(n))
	for i := range edge {
		p := append([][32]byte(nil), proof...)
		p[len(p)-1-i][i%32] ^= 1
		if _, err := New(uint64(n), root, p, recent); !errors.Is(err, ErrRoot) {
			t.Errorf("size %d, edge %d mangled: %v", n, i, err)
		}
	}
	for i := range recent {
		r := append([][32]byte(nil), recent...)
		r[i][31] ^= 0x80
		if _, err := New(uint64(n), root, proof, r); !errors.Is(err, ErrRoot) {
			t.Errorf("size %d, leaf %d mangled: %v", n, i, err)
		}
	}
	if _, err := New(uint64(n), root, proof, recent[1:]); err == nil {
		t.Errorf("size %d: a leaf short was drawn", n)
	}
}

func TestPlanBounds(t *testing.T) {
	tests := []struct {
		size        uint64
		edge        int
		recentStart uint64
	}{
		{1, 0, 0},
		{16, 0, 0},
		{17, 1, 16},
		{32, 1, 16},
		{1_000_000, 8, 999_984},
		{1<<53 - 1, 49, 1<<53 - 16},
	}
	for _, tt := range tests {
		edge, rs := Plan(tt.size)
		if len(edge) != tt.edge || rs != tt.recentStart {
			t.Errorf("Plan(%d) = %d subtrees, recent from %d; want %d, %d", tt.size, len(edge), rs, tt.edge, tt.recentStart)
		}
		var sum uint64
		for _, s := range edge {
			if s.Start != sum || s.Size&(s.Size-1) != 0 {
				t.Errorf("Plan(%d): subtree %+v is not perfect or not adjacent", tt.size, s)
			}
			sum += s.Size
		}
	}
}

func TestDrawWords(t *testing.T) {
	m := buildMem(t, 40)
	root, proof, recent := m.inputs(t, 40)
	tr, err := New(40, root, proof, recent)
	if err != nil {
		t.Fatal(err)
	}
	d := tr.Draw()
	texts := []string{d.Title, d.Desc}
	for _, n := range d.Nodes {
		texts = append(texts, n.Title, n.Label)
	}
	for _, tri := range d.Triangles {
		texts = append(texts, tri.Title, tri.Count, tri.Range)
	}
	if w := awr.ForbiddenWord(strings.Join(texts, "\n")); w != "" {
		t.Errorf("the drawing says %q", w)
	}
}

func TestComma(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 999: "999", 1000: "1,000", 1000000: "1,000,000", 12345678: "12,345,678"} {
		if got := Comma(n); got != want {
			t.Errorf("Comma(%d) = %q, want %q", n, got, want)
		}
	}
}
