package logapi

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"testing"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// TestJSONProofsVerify checks the /api/v1 proofs with code that is not ours,
// transparency-dev/merkle, against roots taken from signed heads.
func TestJSONProofsVerify(t *testing.T) {
	tl := newTestLog(t, 700)
	small := rootFromSTH(t, tl.srv, "/api/v1/log/sth/700")
	tl.appendLabels(t, 300)
	big := rootFromSTH(t, tl.srv, "/api/v1/log/sth")
	h := rfc6962.DefaultHasher
	for _, i := range sampleIndexes(1000, 30) {
		var got struct {
			LeafIndex uint64   `json:"leafIndex"`
			TreeSize  uint64   `json:"treeSize"`
			Proof     []string `json:"proof"`
		}
		getJSON(t, tl.srv, fmt.Sprintf("/api/v1/log/proof/inclusion?leaf_index=%d&tree_size=1000", i), &got)
		if err := proof.VerifyInclusion(h, uint64(i), 1000, h.HashLeaf(tl.labels[i]), decodeHex(t, got.Proof), big); err != nil {
			t.Fatalf("inclusion %d: %v", i, err)
		}
	}
	var c struct {
		Proof []string `json:"proof"`
	}
	getJSON(t, tl.srv, "/api/v1/log/proof/consistency?first=700&second=1000", &c)
	if err := proof.VerifyConsistency(h, 700, 1000, decodeHex(t, c.Proof), small, big); err != nil {
		t.Fatalf("consistency: %v", err)
	}
	var lp struct {
		LabelID        string          `json:"labelId"`
		LeafIndex      uint64          `json:"leafIndex"`
		LeafInput      string          `json:"leafInput"`
		STH            json.RawMessage `json:"sth"`
		InclusionProof []string        `json:"inclusionProof"`
	}
	getJSON(t, tl.srv, "/api/v1/labels/"+labelID(650)+"/proof?tree_size=700", &lp)
	if lp.LabelID != labelID(650) || lp.LeafIndex != 650 || lp.LeafInput != "JCS(label document)" {
		t.Fatalf("label proof %+v", lp)
	}
	if err := proof.VerifyInclusion(h, 650, 700, h.HashLeaf(tl.labels[650]), decodeHex(t, lp.InclusionProof), small); err != nil {
		t.Fatalf("label proof: %v", err)
	}
}

func rootFromSTH(t *testing.T, srv *httptest.Server, path string) []byte {
	t.Helper()
	var sth struct {
		Type     string `json:"type"`
		RootHash string `json:"rootHash"`
	}
	getJSON(t, srv, path, &sth)
	root, err := hex.DecodeString(sth.RootHash)
	if err != nil || len(root) != 32 || sth.Type != "histor.sth/v1" {
		t.Fatalf("%s: %+v", path, sth)
	}
	return root
}

func getJSON(t *testing.T, srv *httptest.Server, path string, v any) {
	t.Helper()
	resp, body := get(t, srv, path)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func decodeHex(t *testing.T, hs []string) [][]byte {
	t.Helper()
	out := make([][]byte, len(hs))
	for i, s := range hs {
		b, err := hex.DecodeString(s)
		if err != nil || len(b) != 32 || hex.EncodeToString(b) != s {
			t.Fatalf("proof hash %q is not 64 lowercase hex digits", s)
		}
		out[i] = b
	}
	return out
}

// sampleIndexes are k leaf indexes of a log of n: the first, the last and
// the rest drawn at random (seeded).
func sampleIndexes(n, k int) []int64 {
	out := []int64{0, int64(n - 1)}
	r := rand.New(rand.NewPCG(1, 2))
	for len(out) < k {
		out = append(out, r.Int64N(int64(n)))
	}
	return out
}
