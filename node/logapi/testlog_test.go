package logapi

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/histor-observer/histor/internal/httpx"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/logtest"
)

// testLog is an open label log of generated labels and one piece of
// evidence, served by the part's routes on real loopback HTTP.
type testLog struct {
	log      *hlog.Log
	pub      ed25519.PublicKey
	srv      *httptest.Server
	labels   [][]byte
	evidence []byte
	sri      string
}

// fixedNow is the clock of test logs, so head timestamps are reproducible.
func fixedNow() time.Time { return time.Date(2026, 9, 23, 9, 13, 4, 0, time.UTC) }

// newTestLog opens a log of n labels and serves it with the node's
// defaults (at most 1000 entries an answer, no crawl state).
func newTestLog(t testing.TB, n int) *testLog {
	t.Helper()
	seed := sha256.Sum256([]byte("logapi test"))
	key := ed25519.NewKeyFromSeed(seed[:])
	pub := key.Public().(ed25519.PublicKey)
	l, err := hlog.Open(context.Background(), hlog.Config{
		Dir: t.TempDir(), Origin: "test.example/log", Key: key, DID: awr.DIDKey(pub), Now: fixedNow,
	})
	if err != nil {
		t.Fatalf("opening log: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	tl := &testLog{log: l, pub: pub, evidence: []byte(`{"tools":[{"name":"echo"}]}`)}
	tl.sri = sriOf(tl.evidence)
	tl.appendLabels(t, n)
	tl.srv = serveMount(t, tl.mount())
	return tl
}

// mount is the part's Mount over the log, as the node makes it.
func (tl *testLog) mount() Mount {
	return Mount{Log: tl.log, Issuer: []byte(`{"did":"test"}`), MaxEntries: 1000, Logger: slog.New(slog.DiscardHandler)}
}

// serveMount serves the part's routes mounted on m, and 404 elsewhere.
func serveMount(t testing.TB, m Mount) *httptest.Server {
	t.Helper()
	router := httpx.NewRouter(append(APIRoutes(m), TileRoutes(m)...))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mt := router.Lookup(r)
		if mt == nil {
			http.NotFound(w, r)
			return
		}
		h, _ := mt.Handler(r.Method)
		if h == nil {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// appendLabels appends n more labels in batches of at most 1000, with the
// evidence in the first batch.
func (tl *testLog) appendLabels(t testing.TB, n int) {
	t.Helper()
	ev := []hlog.Evidence{{Kind: "toolsets", Body: tl.evidence}}
	tl.labels = append(tl.labels, logtest.AppendVerdictLabels(t, tl.log, len(tl.labels), n, ev)...)
}

// labelID and makeLabel are logtest's: the test labels' ids and documents.
var labelID, makeLabel = logtest.LabelID, logtest.VerdictLabel

// get fetches path from srv and returns the response and body.
func get(t testing.TB, srv *httptest.Server, path string) (*http.Response, []byte) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
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
