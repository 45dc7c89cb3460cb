package node

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/registry/registrytest"
	"github.com/histor-observer/histor/internal/faultfs"
	"github.com/histor-observer/histor/internal/promset/promtest"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/witness"
)

// stubCrawls is a crawlControl whose answers the test sets.
type stubCrawls struct {
	running  bool
	lastErr  *string
	since    time.Time
	progress *crawl.ProgressSnapshot
	starts   int
}

func (s *stubCrawls) Status() (bool, *string) { return s.running, s.lastErr }

func (s *stubCrawls) Current() (time.Time, *crawl.ProgressSnapshot, bool) {
	return s.since, s.progress, s.running
}

func (s *stubCrawls) Start() (bool, time.Time) {
	if s.running {
		return false, s.since
	}
	s.starts++
	s.running = true
	return true, s.since
}

// TestHealthReportsCrawl: /health carries the crawl part's status as
// HISTOR's crawl_running and last_crawl_error, false and null without a
// crawler, and the profile.
func TestHealthReportsCrawl(t *testing.T) {
	msg := "harvesting registry: HTTP 503"
	cases := []struct {
		name   string
		crawls crawlControl
		want   string
	}{
		{"no crawler", nil, `{"crawl_running":false,"last_crawl_error":null,"profile":"dev"}`},
		{"running with an error", &stubCrawls{running: true, lastErr: &msg}, `{"crawl_running":true,"last_crawl_error":"harvesting registry: HTTP 503","profile":"dev"}`},
		{"idle after a good crawl", &stubCrawls{}, `{"crawl_running":false,"last_crawl_error":null,"profile":"dev"}`},
	}
	tn := newTestNode(t, 1)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newAPI(tn.node.Log(), nil, tn.node.cfg)
			a.crawls = tc.crawls
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, httptest.NewRequest("GET", "/health", nil))
			var got struct {
				Running bool    `json:"crawl_running"`
				Err     *string `json:"last_crawl_error"`
				Profile string  `json:"profile"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(map[string]any{"crawl_running": got.Running, "last_crawl_error": got.Err, "profile": got.Profile})
			if string(b) != tc.want {
				t.Errorf("health %s, want %s", b, tc.want)
			}
		})
	}
}

// heldMCP is an MCP server that holds every request until released, and
// says when the first one arrived: a crawl meeting it stays mid-way.
type heldMCP struct {
	arrived chan struct{}
	release chan struct{}
	srv     *httptest.Server
}

func newHeldMCP(t *testing.T) *heldMCP {
	h := &heldMCP{arrived: make(chan struct{}, 1), release: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "held", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			panic("a tool was called")
		})
	next := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case h.arrived <- struct{}{}:
		default:
		}
		select {
		case <-h.release:
			next.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// TestStatsReportsRunningCrawl: while a crawl runs, /api/v1/stats carries
// when it began and how far it is; before and after, both are null.
func TestStatsReportsRunningCrawl(t *testing.T) {
	held := newHeldMCP(t)
	reg := registrytest.Server(t, []registrytest.Entry{
		{Name: "io.example/held", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: held.srv.URL + "/mcp"}}},
		{Name: "io.example/templated", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: "https://{tenant}.example.com/mcp"}}},
	})
	nd, err := New(Config{DataDir: t.TempDir(), OperatorToken: "operator-secret", Now: fixedNow,
		Crawl: crawl.Config{Registry: reg.URL, AllowPrivateTargets: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := nd.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer nd.Close()
	type crawlMember struct {
		Running      bool            `json:"running"`
		RunningSince *string         `json:"runningSince"`
		Progress     json.RawMessage `json:"progress"`
	}
	stats := func() crawlMember {
		t.Helper()
		rec := httptest.NewRecorder()
		nd.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/stats", nil))
		var got struct{ Crawl crawlMember }
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("stats %d %s: %v", rec.Code, rec.Body, err)
		}
		return got.Crawl
	}
	if c := stats(); c.Running || c.RunningSince != nil || string(c.Progress) != "null" {
		t.Errorf("before any crawl: %+v %s", c, c.Progress)
	}
	req := httptest.NewRequest("POST", "/api/v1/admin/crawl", nil)
	req.Header.Set("x-histor-operator", "operator-secret")
	nd.Handler().ServeHTTP(httptest.NewRecorder(), req)
	<-held.arrived
	c := stats()
	var p struct{ Done, Of int }
	if err := json.Unmarshal(c.Progress, &p); err != nil || p.Of != 2 || p.Done >= p.Of {
		t.Errorf("progress mid-crawl %s (%v), want 2 targets and fewer done", c.Progress, err)
	}
	if !c.Running || c.RunningSince == nil || *c.RunningSince != "2026-09-23T09:13:04Z" {
		t.Errorf("mid-crawl: running %v since %v, want since the node's clock", c.Running, c.RunningSince)
	}
	close(held.release)
	nd.mu.Lock()
	crawls := nd.crawls
	nd.mu.Unlock()
	crawls.Stop() // waits for the crawl to end
	if c := stats(); c.Running || c.RunningSince != nil || string(c.Progress) != "null" {
		t.Errorf("after the crawl: %+v %s", c, c.Progress)
	}
}

// TestHealthReportsStoppedLog: once a failed write stopped the log (its disk failing from
// then on), /health says ok false and names the cause in log_error; before, ok and null.
func TestHealthReportsStoppedLog(t *testing.T) {
	tn := newTestNode(t, 1)
	seed := sha256.Sum256([]byte("health"))
	key := ed25519.NewKeyFromSeed(seed[:])
	sw := &faultfs.Plan{Kinds: []faultfs.Op{faultfs.Write}}
	l, err := hlog.Open(context.Background(), hlog.Config{Dir: "log", FS: faultfs.Wrap(vfs.NewMem(), sw),
		Origin: "health.test/log", Key: key, DID: awr.DIDKey(key.Public().(ed25519.PublicKey))})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	health := func() (ok bool, logErr *string) {
		t.Helper()
		rec := httptest.NewRecorder()
		newAPI(l, nil, tn.node.cfg).ServeHTTP(rec, httptest.NewRequest("GET", "/health", nil))
		var h struct {
			OK     bool    `json:"ok"`
			LogErr *string `json:"log_error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil {
			t.Fatal(err)
		}
		return h.OK, h.LogErr
	}
	if ok, logErr := health(); !ok || logErr != nil {
		t.Fatalf("health of a working log: ok %v, log_error %v", ok, logErr)
	}
	sw.At, sw.Sticky = sw.Seen()+1, true
	if _, err := l.Append(context.Background(), []hlog.Entry{{ID: "urn:uuid:health-1", Label: []byte(`{}`)}}, nil); err == nil {
		t.Fatal("an append over a failing disk was acknowledged")
	}
	ok, logErr := health()
	if ok || logErr == nil || !strings.Contains(*logErr, "log stopped after a failed") || !strings.Contains(*logErr, faultfs.ErrInjected.Error()) {
		t.Fatalf("health of a stopped log: ok %v, log_error %q", ok, deref(logErr))
	}
}

// TestHealthReportsStoppedReceipts: the receipts log is one of the stores /health names in
// store_errors (its heads are not the label log's, so it is not log_error): once a failed
// write stopped it, ok is false and store_errors.receipts holds the cause.
func TestHealthReportsStoppedReceipts(t *testing.T) {
	tn := newTestNode(t, 1)
	seed := sha256.Sum256([]byte("health receipts"))
	key := ed25519.NewKeyFromSeed(seed[:])
	plan := &faultfs.Plan{Kinds: []faultfs.Op{faultfs.Write}}
	l, err := hlog.Open(context.Background(), hlog.Config{Dir: "receipts", FS: faultfs.Wrap(vfs.NewMem(), plan),
		Origin: "health.test/log/receipts", Key: key, DID: awr.DIDKey(key.Public().(ed25519.PublicKey)),
		STHType: format.ReceiptsSTHType})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a := newAPI(tn.node.log, nil, tn.node.cfg)
	a.stores = func() map[string]store { return map[string]store{"log": tn.node.log, "receipts": l} }
	health := func() (ok bool, logErr *string, stores map[string]string) {
		t.Helper()
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest("GET", "/health", nil))
		var h struct {
			OK     bool              `json:"ok"`
			LogErr *string           `json:"log_error"`
			Stores map[string]string `json:"store_errors"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil {
			t.Fatal(err)
		}
		return h.OK, h.LogErr, h.Stores
	}
	if ok, logErr, stores := health(); !ok || logErr != nil || len(stores) != 0 {
		t.Fatalf("health with a working receipts log: ok %v, log_error %v, store_errors %v", ok, logErr, stores)
	}
	plan.At, plan.Sticky = plan.Seen()+1, true
	if _, err := l.Append(context.Background(), []hlog.Entry{{ID: "urn:uuid:receipt-1", Label: []byte(`{}`)}}, nil); err == nil {
		t.Fatal("an append over a failing disk was acknowledged")
	}
	ok, logErr, stores := health()
	if ok || logErr != nil || !strings.Contains(stores["receipts"], faultfs.ErrInjected.Error()) || len(stores) != 1 {
		t.Fatalf("health with a stopped receipts log: ok %v, log_error %v, store_errors %v", ok, deref(logErr), stores)
	}
}

// TestHealthReportsStoppedStores: once a failed write stopped one of the node's other stores
// (here its witness, over a disk failing from then on), /health says ok false and names the
// store and the cause in store_errors, and histor_store_stopped is 1 for it; before, ok, an
// empty object and 0.
func TestHealthReportsStoppedStores(t *testing.T) {
	tn := newTestNode(t, 1)
	nd := tn.node
	plan := &faultfs.Plan{Kinds: []faultfs.Op{faultfs.Write}}
	seed := sha256.Sum256([]byte("health witness"))
	own, err := format.NewVerifier(nd.cfg.LogOrigin, nd.id.logKey.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	w, err := witness.New(witness.Config{
		Dir: "witness", FS: faultfs.Wrap(vfs.NewMem(), plan), Name: "health.test/w", Key: ed25519.NewKeyFromSeed(seed[:]),
		Logs: map[string]note.Verifier{nd.cfg.LogOrigin: own},
	})
	if err != nil {
		t.Fatal(err)
	}
	nd.fed.SetWitness(w) // the test node witnesses nothing; Close closes this one
	health := func() (ok bool, stores map[string]string) {
		t.Helper()
		var h struct {
			OK     bool              `json:"ok"`
			Stores map[string]string `json:"store_errors"`
		}
		getJSON(t, tn, "/health", &h)
		return h.OK, h.Stores
	}
	// stopped is histor_store_stopped of store; the test fails when it has no series.
	stopped := func(store string) float64 {
		t.Helper()
		return promtest.Value(t, nd.cfg.Registry, "histor_store_stopped", "store", store)
	}
	if ok, stores := health(); !ok || stores == nil || len(stores) != 0 {
		t.Fatalf("health with every store working: ok %v, store_errors %v", ok, stores)
	}
	// Every store besides the log is read, the same map /health reads: each has its series.
	for _, store := range []string{"witness", "mirror", "peers", "crawl_state", "events", "receipts"} {
		if v := stopped(store); v != 0 {
			t.Fatalf("histor_store_stopped{store=%q} is %v with every store working", store, v)
		}
	}
	plan.At, plan.Sticky = plan.Seen()+1, true
	body := witness.Request{Checkpoint: nd.log.Latest().Checkpoint}.Marshal()
	if res, err := w.AddCheckpoint(context.Background(), body); err == nil {
		t.Fatalf("a cosignature over a failing disk was given: %d %s", res.Status, res.Body)
	}
	ok, stores := health()
	if ok || !strings.Contains(stores["witness"], faultfs.ErrInjected.Error()) || len(stores) != 1 {
		t.Fatalf("health with a stopped witness: ok %v, store_errors %v", ok, stores)
	}
	for _, store := range []string{"witness", "mirror", "peers", "crawl_state", "events", "receipts"} {
		if v, want := stopped(store), map[bool]float64{true: 1}[store == "witness"]; v != want {
			t.Fatalf("histor_store_stopped{store=%q} is %v with the witness stopped, want %v", store, v, want)
		}
	}
}

// deref is *s; "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
