package crawl_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/state"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/mtl"
)

// env is one node's log, key and crawl state in a temporary directory.
type env struct {
	dir   string
	log   *hlog.Log
	key   ed25519.PrivateKey
	did   string
	st    *state.Store
	clock *clock
}

func newEnv(t testing.TB) *env {
	t.Helper()
	dir := t.TempDir()
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	did := awr.DIDKey(key.Public().(ed25519.PublicKey))
	e := &env{dir: dir, key: key, did: did, clock: &clock{t: time.Date(2026, 11, 2, 3, 0, 0, 0, time.UTC)}}
	var err error
	e.log, err = hlog.Open(context.Background(), hlog.Config{Dir: filepath.Join(dir, "log"), Origin: "crawl.test/log", Key: key, DID: did, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.log.Close() })
	if e.st, err = state.Open(filepath.Join(dir, "state"), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.st.Close() })
	return e
}

// crawler builds a crawler over registry base with test defaults.
func (e *env) crawler(t testing.TB, base string, edit func(*crawl.Config)) *crawl.Crawler {
	t.Helper()
	cfg := crawl.Config{
		Registry: base, AllowPrivateTargets: true, Workers: 4, Deadline: 10 * time.Second,
		RegistryOptions: registry.Options{Attempts: 1}, Now: e.clock.Now,
		Logger: slog.New(slog.DiscardHandler),
	}
	if edit != nil {
		edit(&cfg)
	}
	c, err := crawl.New(cfg, e.log, e.key, e.did, e.st)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *env) run(t testing.TB, c *crawl.Crawler) *crawl.Summary {
	t.Helper()
	sum, err := c.Run(context.Background())
	if err != nil {
		t.Fatalf("crawl: %v", err)
	}
	total := 0
	for _, n := range sum.ByStatus {
		total += n
	}
	if total != sum.Targets {
		t.Fatalf("statuses add up to %d, targets %d: %v", total, sum.Targets, sum.ByStatus)
	}
	return sum
}

// clock is an injectable clock the tests move forward by hours.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// label is what the tests read from a verified log entry.
type label struct {
	index   uint64
	id      string
	method  string
	verdict string
	subject map[string]any
	doc     map[string]any
}

// labels verifies every entry of the log as an MTL/1 label by the node's
// did, proves each included under the latest signed head, and returns them.
func (e *env) labels(t testing.TB) []label {
	t.Helper()
	head := e.log.Latest()
	var out []label
	for i := uint64(0); i < head.Size; i++ {
		raw, err := e.log.Entry(i)
		if err != nil {
			t.Fatal(err)
		}
		v, err := awr.VerifyLabel(raw)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if v.Issuer != e.did {
			t.Fatalf("entry %d issued by %s", i, v.Issuer)
		}
		p, err := e.log.InclusionProof(i, head.Size)
		if err != nil {
			t.Fatal(err)
		}
		hashes := make([][]byte, len(p))
		for k := range p {
			hashes[k] = p[k][:]
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, i, head.Size, rfc6962.DefaultHasher.HashLeaf(raw), hashes, head.Root[:]); err != nil {
			t.Fatalf("entry %d not included under the head: %v", i, err)
		}
		cs := v.Document["credentialSubject"].(map[string]any)
		out = append(out, label{
			index: i, id: v.ID, doc: v.Document, subject: cs,
			method:  cs["method"].(map[string]any)["id"].(string),
			verdict: cs["verdict"].(string),
		})
	}
	if _, err := format.VerifySTH(head.STH, e.key.Public().(ed25519.PublicKey)); err != nil {
		t.Fatalf("head: %v", err)
	}
	return out
}

func byMethod(ls []label, method string) []label {
	var out []label
	for _, l := range ls {
		if l.method == method {
			out = append(out, l)
		}
	}
	return out
}

// checkEvidence fetches every piece of evidence a label cites by SRI and
// checks its digest.
func (e *env) checkEvidence(t testing.TB, l label) {
	t.Helper()
	kinds := map[string]string{"mtl-subject-descriptor": "descriptors", "mtl-tool-set": "toolsets",
		"mtl-pattern-set": "pattern-sets", "mtl-record-set": "record-sets"}
	for _, item := range l.subject["evidence"].([]any) {
		ev := item.(map[string]any)
		kind, ok := kinds[ev["kind"].(string)]
		if !ok {
			continue
		}
		sri := ev["digestSRI"].(string)
		body, err := e.log.Evidence(kind, sri)
		if err != nil {
			t.Fatalf("label %s: evidence %s %s: %v", l.id, kind, sri, err)
		}
		if mtl.SRI(body) != sri {
			t.Fatalf("label %s: evidence %s does not hash to its address", l.id, sri)
		}
	}
}

// toolServer builds an MCP Go SDK server whose tools have the given
// descriptions (name → description). No tool may ever be called.
func toolServer(tools map[string]string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "1.0.0"}, &mcp.ServerOptions{PageSize: 2})
	for name, desc := range tools {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: desc},
			func(context.Context, *mcp.CallToolRequest, struct {
				City string `json:"city"`
			}) (*mcp.CallToolResult, any, error) {
				panic("a tool was called")
			})
	}
	return s
}

var baseTools = map[string]string{
	"get_weather":  "Returns the current weather for a city.",
	"get_forecast": "Returns a five day forecast for a city.",
	"list_cities":  "Lists the cities with weather data.",
}

// switchable serves one of two handlers, or 503 while down.
type switchable struct {
	which atomic.Int32 // 0: a, 1: b, 2: down
	a, b  http.Handler
}

func (s *switchable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch s.which.Load() {
	case 0:
		s.a.ServeHTTP(w, r)
	case 1:
		s.b.ServeHTTP(w, r)
	default:
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}
}

func stateless(s *mcp.Server) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
}

func serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// summaryOf decodes a change record's summary.
func summaryOf(t testing.TB, c state.Change) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(c.Summary, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
