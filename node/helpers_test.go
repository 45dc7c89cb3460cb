package node

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/logtest"
)

// testNode is a node with an open log of n generated labels and one piece of
// evidence, its handler served on real loopback HTTP.
type testNode struct {
	node     *Node
	srv      *httptest.Server
	labels   [][]byte
	evidence []byte
	sri      string
}

// fixedNow is the clock of test logs, so head timestamps are reproducible.
func fixedNow() time.Time { return time.Date(2026, 9, 23, 9, 13, 4, 0, time.UTC) }

func newTestNode(t testing.TB, n int) *testNode {
	t.Helper()
	nd, err := New(Config{DataDir: t.TempDir(), LogOrigin: "test.example/log", Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if err := nd.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nd.Close() })
	tn := &testNode{node: nd, evidence: []byte(`{"tools":[{"name":"echo"}]}`)}
	sum := sha256.Sum256(tn.evidence)
	tn.sri = "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
	tn.appendLabels(t, n)
	tn.srv = httptest.NewServer(nd.Handler())
	t.Cleanup(tn.srv.Close)
	return tn
}

// appendLabels appends n more labels in batches of at most 1000, with the
// evidence in the first batch.
func (tn *testNode) appendLabels(t testing.TB, n int) {
	t.Helper()
	ev := []hlog.Evidence{{Kind: "toolsets", Body: tn.evidence}}
	tn.labels = append(tn.labels, logtest.AppendVerdictLabels(t, tn.node.Log(), len(tn.labels), n, ev)...)
}

// labelID and makeLabel are logtest's: the test labels' ids and documents.
var labelID, makeLabel = logtest.LabelID, logtest.VerdictLabel

// get fetches path from the test server and returns the response and body.
func (tn *testNode) get(t testing.TB, path string) (*http.Response, []byte) {
	t.Helper()
	resp, err := tn.srv.Client().Get(tn.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func sriOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}
