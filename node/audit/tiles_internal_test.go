package audit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"filippo.io/torchwood"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/tlog"
)

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
