package node

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// TestTorchwoodClientReadsLog reads the whole log with torchwood's C2SP
// client, a second tlog-tiles client we did not write, which checks every
// tile and entry against the checkpoint it is given.
func TestTorchwoodClientReadsLog(t *testing.T) {
	const n = 2000 // seven full bundles and a partial one
	tn := newTestNode(t, n)
	tree := openCheckpoint(t, tn)
	checkTorchwoodCheckpoint(t, tn, tree)
	fetcher, err := torchwood.NewTileFetcher(tn.srv.URL+"/log/", torchwood.WithHTTPClient(tn.srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	client, err := torchwood.NewClient(fetcher)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var got int64
	for i, entry := range client.Entries(ctx, tree, 0) {
		if i != got || !bytes.Equal(entry, tn.labels[i]) {
			t.Fatalf("entry %d (expected %d) differs from what was logged", i, got)
		}
		got++
	}
	if err := client.Err(); err != nil {
		t.Fatal(err)
	}
	// The iterator may leave the trailing partial bundle for a later tree.
	if got < n/256*256 {
		t.Fatalf("read %d entries of %d", got, n)
	}
	for _, i := range []int64{0, 255, 256, n - 1} {
		entry, proof, err := client.Entry(ctx, tree, i)
		if err != nil {
			t.Fatalf("Entry(%d): %v", i, err)
		}
		if !bytes.Equal(entry, tn.labels[i]) || tlog.CheckRecord(proof, tree.N, tree.Hash, i, tlog.RecordHash(entry)) != nil {
			t.Fatalf("Entry(%d) does not check out", i)
		}
	}
}

// checkTorchwoodCheckpoint parses the served checkpoint with torchwood too
// and requires the same tree and origin.
func checkTorchwoodCheckpoint(t *testing.T, tn *testNode, tree tlog.Tree) {
	t.Helper()
	_, cp := tn.get(t, "/log/checkpoint")
	text, _, ok := bytes.Cut(cp, []byte("\n\n"))
	if !ok {
		t.Fatalf("checkpoint %q has no signature block", cp)
	}
	c, err := torchwood.ParseCheckpoint(string(text) + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.Tree != tree || c.Origin != "test.example/log" {
		t.Fatalf("torchwood reads %+v, sumdb %+v", c, tree)
	}
	if _, err := note.Open(cp, note.VerifierList()); err == nil {
		t.Fatal("checkpoint verified with no keys")
	}
}

// TestC2SPTilePathAgreesWithTorchwood checks the sumdb client's path
// mapping (tlog_test.go) against torchwood's C2SP path writer; node/logapi
// checks its parser against the same oracle.
func TestC2SPTilePathAgreesWithTorchwood(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		tile := tlog.Tile{H: 8, L: r.IntN(64) - 1, N: r.Int64N(1 << uint(r.IntN(62)+1)), W: 256}
		if r.IntN(2) == 0 {
			tile.W = r.IntN(255) + 1
		}
		if path := torchwood.TilePath(tile); "/log/"+path != c2spTilePath(tile) {
			t.Fatalf("paths differ: torchwood %q, ours %q", path, c2spTilePath(tile))
		}
	}
}
