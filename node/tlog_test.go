package node

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// This file checks what we serve with code that is not ours: golang.org/x/mod
// sumdb (note, tlog) reads the checkpoint and tiles (node/logapi checks the
// JSON proofs with transparency-dev/merkle).

// c2spTileReader is a tlog.TileReader fetching C2SP tile paths over HTTP.
// sumdb lays its tiles out differently (tile/8/L/N), so the path is mapped
// here, by hand, from the spec.
type c2spTileReader struct {
	base   string
	client *http.Client
}

func (r *c2spTileReader) Height() int { return 8 }

func (r *c2spTileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := r.fetch(c2spTilePath(t))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (r *c2spTileReader) SaveTiles([]tlog.Tile, [][]byte) {}

func (r *c2spTileReader) fetch(path string) ([]byte, error) {
	resp, err := r.client.Get(r.base + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return b, nil
}

// c2spTilePath renders a tlog.Tile as /log/tile/<L>/<N>[.p/<W>]; L = -1 is
// sumdb's name for the data (entry bundle) tiles.
func c2spTilePath(t tlog.Tile) string {
	level := strconv.Itoa(t.L)
	if t.L == -1 {
		level = "entries"
	}
	p := "/log/tile/" + level + "/" + c2spIndex(t.N)
	if t.W != 256 {
		p += ".p/" + strconv.Itoa(t.W)
	}
	return p
}

func c2spIndex(n int64) string {
	s := fmt.Sprintf("%03d", n%1000)
	for n >= 1000 {
		n /= 1000
		s = fmt.Sprintf("x%03d/", n%1000) + s
	}
	return s
}

// openCheckpoint verifies the served checkpoint with the issuer's vkey and
// parses origin, size and root strictly.
func openCheckpoint(t testing.TB, tn *testNode) tlog.Tree {
	t.Helper()
	_, issuer := tn.get(t, "/api/v1/issuer")
	var id struct{ LogVkey, LogOrigin string }
	if err := json.Unmarshal(issuer, &id); err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(id.LogVkey)
	if err != nil {
		t.Fatal(err)
	}
	_, cp := tn.get(t, "/log/checkpoint")
	n, err := note.Open(cp, note.VerifierList(v))
	if err != nil {
		t.Fatalf("opening checkpoint %q: %v", cp, err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) != 4 || lines[0] != id.LogOrigin || lines[3] != "" {
		t.Fatalf("checkpoint text %q", n.Text)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || strconv.FormatInt(size, 10) != lines[1] {
		t.Fatalf("checkpoint size %q", lines[1])
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != 32 {
		t.Fatalf("checkpoint root %q", lines[2])
	}
	var tree tlog.Tree
	tree.N = size
	copy(tree.Hash[:], root)
	return tree
}

func TestTlogClientReadsTiles(t *testing.T) {
	n := 1000
	if !testing.Short() {
		n = 70000 // three tile levels, as in the spec's example
	}
	tn := newTestNode(t, n)
	tree := openCheckpoint(t, tn)
	if tree.N != int64(n) {
		t.Fatalf("checkpoint size %d, want %d", tree.N, n)
	}
	tr := &c2spTileReader{base: tn.srv.URL, client: tn.srv.Client()}
	thr := tlog.TileHashReader(tree, tr) // checks every tile it reads against tree.Hash
	root, err := tlog.TreeHash(tree.N, thr)
	if err != nil || root != tree.Hash {
		t.Fatalf("TreeHash: %x, %v; checkpoint %x", root, err, tree.Hash)
	}
	for _, i := range sampleIndexes(n, 50) {
		p, err := tlog.ProveRecord(tree.N, i, thr)
		if err != nil {
			t.Fatalf("ProveRecord(%d): %v", i, err)
		}
		if err := tlog.CheckRecord(p, tree.N, tree.Hash, i, tlog.RecordHash(tn.labels[i])); err != nil {
			t.Fatalf("CheckRecord(%d): %v", i, err)
		}
	}
	checkAllBundles(t, tn, tr, thr, tree)
}

// checkAllBundles reads every entry bundle and checks each entry's leaf hash
// against the level-0 hashes proven under the checkpoint.
func checkAllBundles(t *testing.T, tn *testNode, tr *c2spTileReader, thr tlog.HashReader, tree tlog.Tree) {
	seen := int64(0)
	for start := int64(0); start < tree.N; start += 256 {
		w := int(min(256, tree.N-start))
		b, err := tr.fetch(c2spTilePath(tlog.Tile{H: 8, L: -1, N: start / 256, W: w}))
		if err != nil {
			t.Fatal(err)
		}
		entries := splitBundle(t, b)
		if len(entries) != w {
			t.Fatalf("bundle %d: %d entries, want %d", start/256, len(entries), w)
		}
		idx := make([]int64, w)
		for i := range idx {
			idx[i] = tlog.StoredHashIndex(0, start+int64(i))
		}
		hashes, err := thr.ReadHashes(idx)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range entries {
			if tlog.RecordHash(e) != hashes[i] || !bytes.Equal(e, tn.labels[start+int64(i)]) {
				t.Fatalf("entry %d does not match the tree", start+int64(i))
			}
		}
		seen += int64(w)
	}
	if seen != tree.N {
		t.Fatalf("read %d entries, tree has %d", seen, tree.N)
	}
}

func sampleIndexes(n, k int) []int64 {
	out := []int64{0, int64(n - 1)}
	r := rand.New(rand.NewPCG(1, 2))
	for len(out) < k {
		out = append(out, r.Int64N(int64(n)))
	}
	return out
}

func getJSON(t *testing.T, tn *testNode, path string, v any) {
	t.Helper()
	resp, body := tn.get(t, path)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// splitBundle splits a C2SP entry bundle into its uint16-length-prefixed entries.
func splitBundle(t testing.TB, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 2 {
			t.Fatalf("bundle: trailing byte")
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n {
			t.Fatalf("bundle: entry of %d bytes runs past the end", n)
		}
		out, b = append(out, b[2:2+n]), b[2+n:]
	}
	return out
}
