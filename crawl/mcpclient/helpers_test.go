package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// methodLog records the JSON-RPC method of every message a test server
// received, so tests can prove what the client sent (and never tools/call).
type methodLog struct {
	mu      sync.Mutex
	methods []string
	reqs    []*http.Request // header snapshots of POSTs, in order
}

func (l *methodLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(body, &msg)
			l.mu.Lock()
			l.methods = append(l.methods, msg.Method)
			l.reqs = append(l.reqs, r.Clone(context.Background()))
			l.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

func (l *methodLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.methods)
}

// allowedMethods is every method this client may ever send.
var allowedMethods = []string{methodDiscover, methodInitialize, methodInitialized, methodToolsList}

func assertReadOnly(t *testing.T, l *methodLog) {
	t.Helper()
	got := l.list()
	if len(got) == 0 {
		t.Fatal("server saw no request")
	}
	for _, m := range got {
		if !slices.Contains(allowedMethods, m) {
			t.Errorf("client sent method %q; only %v are allowed (never tools/call)", m, allowedMethods)
		}
	}
}

func testClient(cfg Config) *Client {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return New(cfg)
}

func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func observe(t *testing.T, c *Client, url string, tr Transport) *Observation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return c.Observe(ctx, url, tr)
}
