package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/histor-observer/histor/node/receipts"
	"github.com/histor-observer/histor/node/receipts/receiptstest"
)

// The receipts log itself is tested in node/receipts; these tests check
// what the node gives it: its directory, key, origin, issuers and body
// bound, and its routes mounted among the node's.

// receiptsNode is a node whose receipts log accepts the hub key, served on
// loopback; reopen closes it and opens a new node over the same data dir.
type receiptsNode struct {
	t    testing.TB
	dir  string
	hub  ed25519.PrivateKey
	node *Node
	srv  *httptest.Server
}

func newReceiptsNode(t *testing.T, issuers ...string) *receiptsNode {
	rn := &receiptsNode{t: t, dir: t.TempDir(), hub: receiptstest.Key("hub")}
	if issuers == nil {
		issuers = []string{receiptstest.DID(rn.hub)}
	}
	rn.open(issuers)
	t.Cleanup(rn.close)
	return rn
}

func (rn *receiptsNode) open(issuers []string) {
	nd, err := New(Config{DataDir: rn.dir, LogOrigin: "test.example/log", Now: fixedNow, ReceiptIssuers: issuers})
	if err != nil {
		rn.t.Fatal(err)
	}
	if err := nd.Open(context.Background()); err != nil {
		rn.t.Fatal(err)
	}
	rn.node, rn.srv = nd, httptest.NewServer(nd.Handler())
}

func (rn *receiptsNode) close() {
	if rn.node != nil {
		rn.srv.Close()
		rn.node.Close()
		rn.node = nil
	}
}

func (rn *receiptsNode) do(method, path string, body []byte) (int, http.Header, []byte) {
	rn.t.Helper()
	req, _ := http.NewRequest(method, rn.srv.URL+path, bytes.NewReader(body))
	resp, err := rn.srv.Client().Do(req)
	if err != nil {
		rn.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// anchorsBody is digests anchored by key at fixedNow, one submission.
func anchorsBody(t testing.TB, key ed25519.PrivateKey, digests ...string) []byte {
	t.Helper()
	var anchors []json.RawMessage
	for _, d := range digests {
		anchors = append(anchors, receiptstest.Anchor(t, key, d, fixedNow()))
	}
	return receiptstest.Body(anchors...)
}

// verifyReceiptsSTH checks a receipts head as an outsider would, under the node's did:key.
func (rn *receiptsNode) verifyReceiptsSTH(doc []byte) (size uint64) {
	rn.t.Helper()
	return receiptstest.VerifySTH(rn.t, doc, rn.node.DID()).TreeSize
}

// TestReceiptsPart: the node's receipts log is served at its routes, signs
// its heads with the node's key, grows apart from the label log, keeps its
// heads in DataDir across a restart, and answers with the node's body
// bound; a node with no ReceiptIssuers takes nothing.
func TestReceiptsPart(t *testing.T) {
	rn := newReceiptsNode(t)
	if status, _, body := rn.do(http.MethodGet, "/api/v1/receipts/sth", nil); status != 404 || string(body) != `{"detail":"the receipts log is empty"}` {
		t.Fatalf("empty log head: %d %s", status, body)
	}
	labels := rn.node.Log().Size()
	status, _, body := rn.do(http.MethodPost, "/api/v1/receipts/anchors", anchorsBody(t, rn.hub, receiptstest.Digest(0), receiptstest.Digest(1), receiptstest.Digest(2)))
	var ans struct {
		Results []map[string]any
		STH     json.RawMessage
	}
	if status != 200 || json.Unmarshal(body, &ans) != nil || len(ans.Results) != 3 || ans.Results[2]["status"] != "logged" {
		t.Fatalf("submit: %d %s", status, body)
	}
	if size := rn.verifyReceiptsSTH(ans.STH); size != 3 {
		t.Fatalf("head after submit: size %d, want 3", size)
	}
	if got := rn.node.Log().Size(); got != labels {
		t.Fatalf("label log size %d after anchoring, want %d: the trees are apart", got, labels)
	}
	q := url.Values{"digest": {receiptstest.Digest(1)}, "tree_size": {"3"}}
	if status, _, body := rn.do(http.MethodGet, "/api/v1/receipts/proof?"+q.Encode(), nil); status != 200 || !strings.Contains(string(body), `"leaf_index":1,`) {
		t.Fatalf("proof: %d %s", status, body)
	}
	if status, _, body := rn.do(http.MethodGet, "/api/v1/receipts/proof/consistency?first=1&second=3", nil); status != 200 || !strings.HasPrefix(string(body), `{"first":1,"second":3,"proof":["`) {
		t.Fatalf("consistency: %d %s", status, body)
	}
	tooLarge := bytes.Repeat([]byte(" "), receipts.DefaultMaxBodyBytes+1)
	if status, _, body := rn.do(http.MethodPost, "/api/v1/receipts/anchors", tooLarge); status != 413 || string(body) != `{"detail":"body larger than 2097152 bytes"}` {
		t.Errorf("too large: %d %s", status, body)
	}
	_, _, before := rn.do(http.MethodGet, "/api/v1/receipts/sth/3", nil)

	rn.close()
	rn.open(nil)
	if status, _, after := rn.do(http.MethodGet, "/api/v1/receipts/sth", nil); status != 200 || !bytes.Equal(before, after) {
		t.Fatalf("head across a restart: %d\n%s\n%s", status, before, after)
	}
	status, _, body = rn.do(http.MethodPost, "/api/v1/receipts/anchors", anchorsBody(t, rn.hub, receiptstest.Digest(3)))
	if status != 503 || string(body) != `{"detail":"the receipts log accepts no issuers on this instance"}` {
		t.Fatalf("no issuers: %d %s", status, body)
	}
}

// TestReceiptsConsistencyShared: the receipts log's consistency route
// answers the label log's refusals with the same bytes and headers, the
// one handler over either tree.
func TestReceiptsConsistencyShared(t *testing.T) {
	rn := newReceiptsNode(t)
	for _, q := range []string{"first=2&second=1", "first=0&second=1", "first=1", "first=01&second=2", "first=1&second=99"} {
		ls, lh, lb := rn.do(http.MethodGet, "/api/v1/log/proof/consistency?"+q, nil)
		rs, rh, rb := rn.do(http.MethodGet, "/api/v1/receipts/proof/consistency?"+q, nil)
		lh.Del("Date")
		rh.Del("Date")
		if ls != rs || !bytes.Equal(lb, rb) || fmt.Sprint(lh) != fmt.Sprint(rh) || ls != 400 {
			t.Errorf("%s: label log %d %v %s, receipts %d %v %s", q, ls, lh, lb, rs, rh, rb)
		}
	}
}

// TestReceiptIssuersChecked: Config refuses ReceiptIssuers that are not
// Ed25519 did:keys or that list one twice, naming the field.
func TestReceiptIssuersChecked(t *testing.T) {
	hub := receiptstest.DID(receiptstest.Key("hub"))
	for _, tc := range []struct {
		issuers []string
		want    string
	}{
		{[]string{hub, "did:web:hub.example"}, "config: ReceiptIssuers[1] is not an Ed25519 did:key: "},
		{[]string{hub, hub}, "config: ReceiptIssuers lists " + hub + " twice"},
	} {
		_, err := New(Config{DataDir: t.TempDir(), LogOrigin: "test.example/log", ReceiptIssuers: tc.issuers})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.issuers, err, tc.want)
		}
	}
	if receipts.Origin("test.example/log") != "test.example/log/receipts" {
		t.Errorf("receipts origin %q", receipts.Origin("test.example/log"))
	}
}
