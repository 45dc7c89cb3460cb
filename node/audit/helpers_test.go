package audit_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/node"
)

// vectorLabel is an AWR/2 label from the MTL/1 vectors, used as the template of test labels.
const vectorLabel = "../../log/awr/testdata/pass-01-pattern-scan.awr.json"

// testLog is a real node over a real Pebble log, served on loopback.
type testLog struct {
	node *node.Node
	srv  *httptest.Server
	key  ed25519.PrivateKey // the log key, which also signs the labels
	did  string
	ids  []string // label ids in leaf order
}

// newTestLog starts a node whose seed is a copy of seedFile (so two logs can share a key),
// or a fresh seed when seedFile is empty.
func newTestLog(t testing.TB, seedFile string) *testLog {
	t.Helper()
	dir := t.TempDir()
	seedPath := filepath.Join(dir, "seed")
	if seedFile == "" {
		if _, err := keys.Generate(seedPath); err != nil {
			t.Fatal(err)
		}
	} else {
		b, err := os.ReadFile(seedFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(seedPath, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n, err := node.New(node.Config{DataDir: dir, LogOrigin: "audit.test/log"})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	seed, err := keys.Load(seedPath)
	if err != nil {
		t.Fatal(err)
	}
	tl := &testLog{node: n, key: seed.LogKey(), did: n.DID()}
	tl.srv = httptest.NewServer(n.Handler())
	t.Cleanup(tl.srv.Close)
	return tl
}

func seedPath(tl *testLog) string { return filepath.Join(filepath.Dir(tl.node.LogDir()), "seed") }

// appendLabels signs k new labels with the log key and appends them, one batch.
func (tl *testLog) appendLabels(t testing.TB, k int) {
	t.Helper()
	entries := make([]hlog.Entry, k)
	for i := range entries {
		id, label := signLabel(t, tl.key, tl.did)
		entries[i] = hlog.Entry{ID: id, Label: label}
		tl.ids = append(tl.ids, id)
	}
	if _, err := tl.node.Log().Append(context.Background(), entries, nil); err != nil {
		t.Fatal(err)
	}
}

// signLabel re-issues the vector label under did with a fresh id and signs it with key.
func signLabel(t testing.TB, key ed25519.PrivateKey, did string) (string, []byte) {
	t.Helper()
	raw, err := os.ReadFile(vectorLabel)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "proof")
	id := newUUID()
	doc["id"] = id
	doc["issuer"] = map[string]any{"id": did, "name": "audit test log"}
	signed, err := awr.Sign(doc, key, time.Date(2026, 7, 30, 9, 15, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return id, signed
}

func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// tamper serves h, but lets edit rewrite the answer to the paths it matches.
func tamper(t *testing.T, h http.Handler, match func(*http.Request) bool, edit func([]byte) []byte) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !match(r) {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		r.Header.Del("Accept-Encoding") // edit the plain bytes, not a gzip stream
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		w.Write(edit(rec.Body.Bytes()))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func pathIs(p string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.URL.Path == p }
}

func httptestServer(t *testing.T, h http.HandlerFunc) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
