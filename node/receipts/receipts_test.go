package receipts

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/histor-observer/histor/internal/httpx/httpxtest"
	"github.com/histor-observer/histor/node/receipts/receiptstest"
)

// testMaxBody is the body bound the tests open the log with, the node's.
const testMaxBody = 2 << 20

func fixedNow() time.Time { return time.Date(2026, 9, 23, 9, 13, 4, 0, time.UTC) }

// receiptsNode is a receipts log that accepts the hub key, its routes
// served on loopback; reopen closes it and opens it again over the same
// directory.
type receiptsNode struct {
	t   testing.TB
	dir string
	hub ed25519.PrivateKey
	key ed25519.PrivateKey // signs the heads
	log *Log
	srv *httptest.Server
}

func newReceiptsNode(t *testing.T, issuers ...string) *receiptsNode {
	rn := &receiptsNode{t: t, dir: t.TempDir(), hub: receiptstest.Key("hub"), key: receiptstest.Key("log")}
	if issuers == nil {
		issuers = []string{receiptstest.DID(rn.hub)}
	}
	rn.open(issuers)
	t.Cleanup(rn.close)
	return rn
}

func (rn *receiptsNode) open(issuers []string) {
	l, err := Open(context.Background(), Config{
		Dir: rn.dir, Origin: Origin("test.example/log"), Key: rn.key, DID: rn.did(), Issuers: issuers,
		MaxClients: 1000, MaxBodyBytes: testMaxBody, Now: fixedNow, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		rn.t.Fatal(err)
	}
	rn.log, rn.srv = l, httptest.NewServer(serveRoutes(Routes(l)))
}

// did is the log's did:key, its heads' log member.
func (rn *receiptsNode) did() string { return receiptstest.DID(rn.key) }

func (rn *receiptsNode) close() {
	if rn.log != nil {
		rn.srv.Close()
		if err := rn.log.Close(); err != nil {
			rn.t.Error(err)
		}
		rn.log = nil
	}
}

// serveRoutes answers through routes as the node's router does (httpxtest.Serve).
var serveRoutes = httpxtest.Serve

func (rn *receiptsNode) reopen() {
	rn.close()
	rn.open([]string{receiptstest.DID(rn.hub)})
}

func (rn *receiptsNode) do(method, path string, body []byte) (int, []byte) {
	rn.t.Helper()
	req, _ := http.NewRequest(method, rn.srv.URL+path, bytes.NewReader(body))
	resp, err := rn.srv.Client().Do(req)
	if err != nil {
		rn.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

type submitAnswer struct {
	Results []map[string]any `json:"results"`
	STH     json.RawMessage  `json:"sth"`
}

// submitRange anchors receipts [from, to) in one batch and checks every one
// is logged at its index.
func (rn *receiptsNode) submitRange(from, to int, docs map[int]json.RawMessage) {
	rn.t.Helper()
	var batch []json.RawMessage
	for i := from; i < to; i++ {
		docs[i] = receiptstest.Anchor(rn.t, rn.hub, receiptstest.Digest(i), fixedNow())
		batch = append(batch, docs[i])
	}
	status, body := rn.do(http.MethodPost, "/api/v1/receipts/anchors", receiptstest.Body(batch...))
	var ans submitAnswer
	if status != 200 || json.Unmarshal(body, &ans) != nil {
		rn.t.Fatalf("submit: %d %s", status, body)
	}
	for i, r := range ans.Results {
		if r["status"] != "logged" || r["leaf_index"] != float64(from+i) || r["receipt_digest"] != receiptstest.Digest(from+i) {
			rn.t.Fatalf("result %d: %v", i, r)
		}
	}
	if got := rn.verifySTH(ans.STH); got.TreeSize != uint64(to) {
		rn.t.Fatalf("sth after submit: size %d, want %d", got.TreeSize, to)
	}
}

// verifySTH checks a receipts head as an outsider would, under the log's did:key.
func (rn *receiptsNode) verifySTH(doc []byte) receiptstest.STH {
	rn.t.Helper()
	return receiptstest.VerifySTH(rn.t, doc, rn.did())
}

func (rn *receiptsNode) head(size int) receiptstest.STH {
	rn.t.Helper()
	status, body := rn.do(http.MethodGet, fmt.Sprintf("/api/v1/receipts/sth/%d", size), nil)
	if status != 200 {
		rn.t.Fatalf("sth/%d: %d %s", size, status, body)
	}
	return rn.verifySTH(body)
}

func unhex(t testing.TB, hs []string) [][]byte {
	out := make([][]byte, len(hs))
	for i, h := range hs {
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// checkInclusion proves anchor i under the head of size with the
// transparency-dev verifier, from the bytes the hub submitted.
func (rn *receiptsNode) checkInclusion(i, size int, doc []byte) {
	rn.t.Helper()
	q := url.Values{"digest": {receiptstest.Digest(i)}, "tree_size": {fmt.Sprint(size)}}
	status, body := rn.do(http.MethodGet, "/api/v1/receipts/proof?"+q.Encode(), nil)
	var p struct {
		Anchor    json.RawMessage `json:"anchor"`
		LeafIndex uint64          `json:"leaf_index"`
		LoggedAt  string          `json:"logged_at"`
		TreeSize  uint64          `json:"tree_size"`
		AuditPath []string        `json:"audit_path"`
		STH       json.RawMessage `json:"sth"`
	}
	if status != 200 || json.Unmarshal(body, &p) != nil {
		rn.t.Fatalf("proof %d@%d: %d %s", i, size, status, body)
	}
	if !bytes.Equal(p.Anchor, doc) || p.LeafIndex != uint64(i) || p.TreeSize != uint64(size) || p.LoggedAt == "" {
		rn.t.Fatalf("proof %d@%d: %s", i, size, body)
	}
	root := rn.head(size).RootHash
	want, _ := hex.DecodeString(root)
	h := rfc6962.DefaultHasher
	if err := proof.VerifyInclusion(h, uint64(i), uint64(size), h.HashLeaf(doc), unhex(rn.t, p.AuditPath), want); err != nil {
		rn.t.Fatalf("inclusion of %d in %d: %v", i, size, err)
	}
	if !bytes.Equal(p.STH, mustGet(rn, fmt.Sprintf("/api/v1/receipts/sth/%d", size))) {
		rn.t.Fatalf("proof sth is not the head at %d", size)
	}
}

func mustGet(rn *receiptsNode, path string) []byte {
	status, body := rn.do(http.MethodGet, path, nil)
	if status != 200 {
		rn.t.Fatalf("%s: %d %s", path, status, body)
	}
	return body
}

func (rn *receiptsNode) checkConsistency(first, second int) {
	rn.t.Helper()
	body := mustGet(rn, fmt.Sprintf("/api/v1/receipts/proof/consistency?first=%d&second=%d", first, second))
	var c struct{ Proof []string }
	if err := json.Unmarshal(body, &c); err != nil {
		rn.t.Fatal(err)
	}
	r1, _ := hex.DecodeString(rn.head(first).RootHash)
	r2, _ := hex.DecodeString(rn.head(second).RootHash)
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, uint64(first), uint64(second), unhex(rn.t, c.Proof), r1, r2); err != nil {
		rn.t.Fatalf("consistency %d→%d: %v", first, second, err)
	}
}

// TestReceiptsAnchorAndProve anchors batches, proves every anchor under
// every later head and the heads consistent, reopens the log over the
// same directory and proves it all again, then grows the log further.
func TestReceiptsAnchorAndProve(t *testing.T) {
	rn := newReceiptsNode(t)
	if status, body := rn.do(http.MethodGet, "/api/v1/receipts/sth", nil); status != 404 || !strings.Contains(string(body), `"the receipts log is empty"`) {
		t.Fatalf("empty log head: %d %s", status, body)
	}
	docs := map[int]json.RawMessage{}
	sizes := []int{3, 8, 9}
	prev := 0
	for _, s := range sizes {
		rn.submitRange(prev, s, docs)
		prev = s
	}
	checkAll := func(sizes []int) {
		for _, size := range sizes {
			for i := 0; i < size; i++ {
				rn.checkInclusion(i, size, docs[i])
			}
		}
		for _, a := range sizes {
			for _, b := range sizes {
				if a <= b {
					rn.checkConsistency(a, b)
				}
			}
		}
	}
	checkAll(sizes)
	before := mustGet(rn, "/api/v1/receipts/sth")

	rn.reopen()
	if after := mustGet(rn, "/api/v1/receipts/sth"); !bytes.Equal(before, after) {
		t.Fatalf("head changed across a restart:\n%s\n%s", before, after)
	}
	rn.submitRange(9, 12, docs)
	checkAll(append(sizes, 12))
}

// TestReceiptsRefusals: each bad anchor is refused with HISTOR's reason
// and nothing is logged; bad submissions get HISTOR's error shape.
func TestReceiptsRefusals(t *testing.T) {
	rn := newReceiptsNode(t)
	stranger := receiptstest.Key("stranger")
	good := func() json.RawMessage { return receiptstest.Anchor(t, rn.hub, receiptstest.Digest(1), fixedNow()) }
	edit := func(f func(m map[string]any)) json.RawMessage {
		var m map[string]any
		json.Unmarshal(good(), &m)
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	for _, tc := range []struct {
		name   string
		anchor json.RawMessage
		reason string
	}{
		{"stranger", receiptstest.Anchor(t, stranger, receiptstest.Digest(2), fixedNow()), "not accepted"},
		{"tampered", edit(func(m map[string]any) { m["receiptDigest"] = receiptstest.Digest(3) }), "signature"},
		{"short digest", receiptstest.Anchor(t, rn.hub, "sha256-short", fixedNow()), "SRI"},
		{"future", receiptstest.Anchor(t, rn.hub, receiptstest.Digest(2), fixedNow().Add(time.Hour)), "window"},
		{"old", receiptstest.Anchor(t, rn.hub, receiptstest.Digest(2), fixedNow().Add(-40*24*time.Hour)), "window"},
		{"extra member", edit(func(m map[string]any) { m["price"] = 1 }), "exactly"},
		{"no signature", edit(func(m map[string]any) { delete(m, "signature") }), "exactly"},
		{"padded value", edit(func(m map[string]any) {
			m["signature"].(map[string]any)["value"] = m["signature"].(map[string]any)["value"].(string) + "=="
		}), "signature"},
		{"not an object", json.RawMessage(`"sha256-x"`), "not a histor.receipt-anchor/v1"},
		{"fractional time", edit(func(m map[string]any) { m["issuedAt"] = "2026-09-23T09:13:04.5Z" }), "whole seconds"},
	} {
		status, body := rn.do(http.MethodPost, "/api/v1/receipts/anchors", receiptstest.Body(tc.anchor))
		var ans submitAnswer
		if status != 200 || json.Unmarshal(body, &ans) != nil || len(ans.Results) != 1 {
			t.Fatalf("%s: %d %s", tc.name, status, body)
		}
		r := ans.Results[0]
		if r["status"] != "refused" || !strings.Contains(r["reason"].(string), tc.reason) || string(ans.STH) != "null" {
			t.Errorf("%s: %s", tc.name, body)
		}
	}
	many := make([]json.RawMessage, MaxAnchorBatch+1)
	for i := range many {
		many[i] = good()
	}
	for _, tc := range []struct {
		name   string
		body   []byte
		status int
		detail string
	}{
		{"empty batch", []byte(`{"anchors":[]}`), 400, "anchors must be a list of 1-100"},
		{"no anchors", []byte(`{}`), 400, "anchors must be a list of 1-100"},
		{"anchors not a list", []byte(`{"anchors":{"a":1}}`), 400, "anchors must be a list of 1-100"},
		{"101 anchors", receiptstest.Body(many...), 400, "anchors must be a list of 1-100"},
		{"not JSON", []byte(`{"anchors":[`), 400, "body is not JSON"},
		{"not an object", []byte(`[1]`), 400, "body must be a JSON object"},
		{"too large", bytes.Repeat([]byte(" "), testMaxBody+1), 413, "body larger than 2097152 bytes"},
	} {
		status, body := rn.do(http.MethodPost, "/api/v1/receipts/anchors", tc.body)
		want, _ := json.Marshal(map[string]string{"detail": tc.detail})
		if status != tc.status || !bytes.Equal(body, want) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, status, body, tc.status, want)
		}
	}
	if status, _ := rn.do(http.MethodGet, "/api/v1/receipts/sth", nil); status != 404 {
		t.Errorf("something was logged: sth %d", status)
	}
	for path, want := range map[string]int{
		"/api/v1/receipts/proof?digest=" + url.QueryEscape(receiptstest.Digest(1)): 404,
		"/api/v1/receipts/proof?digest=sha256-short":                               400,
		"/api/v1/receipts/proof":                                                   400,
		"/api/v1/receipts/sth/0":                                                   404,
		"/api/v1/receipts/sth/01":                                                  400,
		"/api/v1/receipts/proof/consistency?first=2&second=1":                      400,
		"/api/v1/receipts/proof/consistency?first=1&second=1":                      400,
	} {
		if status, body := rn.do(http.MethodGet, path, nil); status != want || !strings.HasPrefix(string(body), `{"detail":`) {
			t.Errorf("%s: %d %s, want %d", path, status, body, want)
		}
	}
}

// TestReceiptsDuplicates: resubmitting is idempotent, a digest belongs to
// the issuer that anchored it first, and a digest twice in one batch is
// logged once.
func TestReceiptsDuplicates(t *testing.T) {
	other := receiptstest.Key("other hub")
	rn := newReceiptsNode(t, receiptstest.DID(receiptstest.Key("hub")), receiptstest.DID(other))
	a := receiptstest.Anchor(t, rn.hub, receiptstest.Digest(1), fixedNow())
	again := receiptstest.Anchor(t, rn.hub, receiptstest.Digest(1), fixedNow().Add(-time.Minute))
	theft := receiptstest.Anchor(t, other, receiptstest.Digest(1), fixedNow())
	status, body := rn.do(http.MethodPost, "/api/v1/receipts/anchors", receiptstest.Body(a, again, theft, receiptstest.Anchor(t, other, receiptstest.Digest(2), fixedNow())))
	var ans submitAnswer
	if status != 200 || json.Unmarshal(body, &ans) != nil {
		t.Fatalf("%d %s", status, body)
	}
	want := []string{
		`{"leaf_index":0,"receipt_digest":"` + receiptstest.Digest(1) + `","status":"logged"}`,
		`{"leaf_index":0,"receipt_digest":"` + receiptstest.Digest(1) + `","status":"duplicate"}`,
		`{"reason":"this digest is already anchored by another issuer","receipt_digest":"` + receiptstest.Digest(1) + `","status":"refused"}`,
		`{"leaf_index":1,"receipt_digest":"` + receiptstest.Digest(2) + `","status":"logged"}`,
	}
	for i, r := range ans.Results {
		if got, _ := json.Marshal(r); string(got) != want[i] {
			t.Errorf("result %d: %s, want %s", i, got, want[i])
		}
	}
	status, body = rn.do(http.MethodPost, "/api/v1/receipts/anchors", receiptstest.Body(again, theft))
	if !strings.Contains(string(body), `"status":"duplicate"`) || !strings.Contains(string(body), "another issuer") || !strings.Contains(string(body), `"treeSize":2`) {
		t.Errorf("resubmission: %d %s", status, body)
	}
}

// TestReceiptsNoIssuers: a log that lists none is served but takes
// nothing.
func TestReceiptsNoIssuers(t *testing.T) {
	rn := newReceiptsNode(t, []string{}...)
	rn.close()
	rn.open(nil)
	status, body := rn.do(http.MethodPost, "/api/v1/receipts/anchors", receiptstest.Body(receiptstest.Anchor(t, rn.hub, receiptstest.Digest(1), fixedNow())))
	if status != 503 || string(body) != `{"detail":"the receipts log accepts no issuers on this instance"}` {
		t.Fatalf("%d %s", status, body)
	}
}

// TestRoutesWithoutLog: with no receipts log every route answers HISTOR's
// 404, and the table is the five routes in the node's order.
func TestRoutesWithoutLog(t *testing.T) {
	routes := Routes(nil)
	var patterns []string
	for _, r := range routes {
		patterns = append(patterns, strings.Join(r.Methods, ",")+" "+r.Pattern)
	}
	want := []string{
		"POST /api/v1/receipts/anchors",
		"GET /api/v1/receipts/sth",
		"GET /api/v1/receipts/sth/{tree_size}",
		"GET /api/v1/receipts/proof",
		"GET /api/v1/receipts/proof/consistency",
	}
	if !slices.Equal(patterns, want) {
		t.Fatalf("routes %v, want %v", patterns, want)
	}
	srv := httptest.NewServer(serveRoutes(routes))
	defer srv.Close()
	for _, tc := range []struct{ method, path string }{
		{http.MethodPost, "/api/v1/receipts/anchors"},
		{http.MethodGet, "/api/v1/receipts/sth"},
		{http.MethodGet, "/api/v1/receipts/sth/1"},
		{http.MethodGet, "/api/v1/receipts/proof?digest=" + url.QueryEscape(receiptstest.Digest(1))},
		{http.MethodGet, "/api/v1/receipts/proof/consistency?first=1&second=1"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(`{"anchors":[]}`))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || string(body) != `{"detail":"this instance has no receipts log"}` {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, resp.StatusCode, body)
		}
	}
}

// TestOpenRefuses: Open refuses an issuer that is not an Ed25519 did:key,
// one listed twice and a body bound that is not positive, and creates
// nothing then.
func TestOpenRefuses(t *testing.T) {
	hub := receiptstest.DID(receiptstest.Key("hub"))
	for _, tc := range []struct {
		name    string
		issuers []string
		max     int64
		want    string
	}{
		{"not a did:key", []string{hub, "did:web:hub.example"}, testMaxBody, "issuer 1 is not an Ed25519 did:key"},
		{"twice", []string{hub, hub}, testMaxBody, "issuer " + hub + " is listed twice"},
		{"no body bound", []string{hub}, 0, "MaxBodyBytes must be positive"},
	} {
		dir := filepath.Join(t.TempDir(), "receipts")
		key := receiptstest.Key("log")
		l, err := Open(context.Background(), Config{Dir: dir, Origin: "test.example/log/receipts", Key: key, DID: receiptstest.DID(key),
			Issuers: tc.issuers, MaxClients: 10, MaxBodyBytes: tc.max})
		if err == nil {
			l.Close()
			t.Fatalf("%s: opened", tc.name)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if _, serr := os.Stat(dir); !errors.Is(serr, fs.ErrNotExist) {
			t.Errorf("%s: refused, but %s exists (%v)", tc.name, dir, serr)
		}
	}
	var ie *IssuerError
	if err := CheckIssuers([]string{hub, "x", hub}); !errors.As(err, &ie) || ie.Index != 1 || ie.Twice || ie.Err == nil {
		t.Errorf("CheckIssuers: %v", err)
	}
	if err := CheckIssuers([]string{hub, receiptstest.DID(receiptstest.Key("other"))}); err != nil {
		t.Errorf("CheckIssuers of two did:keys: %v", err)
	}
}
