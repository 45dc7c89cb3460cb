package log

import (
	"encoding/hex"
	"io"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/log/format"
)

// The reference tree of RFC 6962's test data (also transparency-dev/merkle's
// testdata and certificate-transparency-go's merkle tests): eight leaves and
// the published roots of every prefix and a few of its proofs. Our own tile
// layout and stored-node reader must reproduce them.
var rfc6962Leaves = []string{
	"", "00", "10", "2021", "3031", "40414243",
	"5051525354555657", "606162636465666768696a6b6c6d6e6f",
}

var rfc6962Roots = []string{
	"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
	"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
	"aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
	"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
	"4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
	"76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
	"ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
	"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
}

func TestRFC6962Vectors(t *testing.T) {
	state := &tileState{}
	tiles := map[[2]uint64][]byte{}
	put := func(level int, n uint64, data []byte) { tiles[[2]uint64{uint64(level), n}] = encodeTile(data) }
	for i, leaf := range rfc6962Leaves {
		b, _ := hex.DecodeString(leaf)
		state.appendLeaves([][32]byte{format.LeafHash(b)}, put)
		if got := hex.EncodeToString(hashBytes(state.root())); got != rfc6962Roots[i] {
			t.Fatalf("root of %d leaves = %s, want %s", i+1, got, rfc6962Roots[i])
		}
	}
	r := hashReader{get: func(level int, n uint64) ([]byte, io.Closer, error) {
		return tiles[[2]uint64{uint64(level), n}], io.NopCloser(nil), nil
	}}
	checkProof := func(name string, got tlog.RecordProof, err error, want ...string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d hashes, want %d", name, len(got), len(want))
		}
		for i := range got {
			if h := hex.EncodeToString(got[i][:]); h != want[i] {
				t.Errorf("%s[%d] = %s, want %s", name, i, h, want[i])
			}
		}
	}
	p, err := tlog.ProveRecord(8, 0, r)
	checkProof("inclusion of leaf 0 in 8", p, err,
		"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
		"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
		"6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4")
	p, err = tlog.ProveRecord(8, 5, r)
	checkProof("inclusion of leaf 5 in 8", p, err,
		"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
		"ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
		"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7")
	c, err := tlog.ProveTree(8, 6, r)
	checkProof("consistency 6 → 8", tlog.RecordProof(c), err,
		"0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
		"ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
		"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7")
	c, err = tlog.ProveTree(5, 2, r)
	checkProof("consistency 2 → 5", tlog.RecordProof(c), err,
		"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
		"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b")
}

func hashBytes(h [32]byte) []byte { return h[:] }
