package audit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"filippo.io/torchwood"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/tlog"
)

// TestSplitBundleStopsAtWant: a bundle of zero bytes reads as one empty entry per two bytes.
// The split must stop once it has the entries it wants, not allocate for millions of them.
func TestSplitBundleStopsAtWant(t *testing.T) {
	body := make([]byte, 16<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := splitBundle(body, 256)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "after the 256 entries") {
		t.Errorf("a bundle with bytes past its 256 entries: err %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("splitting allocated %d bytes, want under 1 MiB", n)
	}
}

// TestTreeWalkAgreesWithTlog: the streaming walk asks for exactly the hash tiles x/mod's tlog
// lists for a tree, and finds in each what tlog computes from all the stored hashes, across
// the sizes where tiles fill up and levels appear.
func TestTreeWalkAgreesWithTlog(t *testing.T) {
	const most = 65536 + 300
	var stored []tlog.Hash
	leaves := make([][]byte, most)
	for i := range leaves {
		leaves[i] = rfc6962.DefaultHasher.HashLeaf([]byte(strconv.Itoa(i)))
		hashes, err := tlog.StoredHashes(int64(i), []byte(strconv.Itoa(i)), hashReader(stored))
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, hashes...)
	}
	for _, n := range []int64{0, 1, 255, 256, 257, 511, 65535, 65536, most} {
		served := map[string][]byte{}
		for _, tile := range tlog.NewTiles(torchwood.TileHeight, 0, n) {
			data, err := tlog.ReadTileData(tile, hashReader(stored))
			if err != nil {
				t.Fatal(err)
			}
			served["/log/"+torchwood.TilePath(tile)] = data
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			data, ok := served[r.URL.Path]
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Write(data)
		}))
		a, err := newAuditor(Options{Base: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		w := newTreeWalk(a)
		for _, leaf := range leaves[:n] {
			if err := w.add(context.Background(), leaf); err != nil {
				t.Fatalf("size %d: %v", n, err)
			}
		}
		root, err := tlog.TreeHash(n, hashReader(stored))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.checkRoot(uint64(n), root); err != nil {
			t.Errorf("size %d: %v", n, err)
		}
		if err := w.finish(context.Background(), uint64(n)); err != nil {
			t.Errorf("size %d: %v", n, err)
		}
		if w.compared != len(served) {
			t.Errorf("size %d: compared %d hash tiles, tlog lists %d", n, w.compared, len(served))
		}
		srv.Close()
	}
}

type hashReader []tlog.Hash

func (h hashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		out[i] = h[x]
	}
	return out, nil
}
