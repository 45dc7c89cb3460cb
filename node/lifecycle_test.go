package node

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/state"
)

// TestPartsOrder: the parts open in order and close in reverse — the API,
// then the crawls, the crawler, the crawl state, the log, the metrics — and a part that
// fails to open closes the ones before it, in reverse, and no others.
func TestPartsOrder(t *testing.T) {
	var n Node
	var names []string
	for _, p := range n.parts() {
		names = append(names, p.name)
	}
	if want := []string{"metrics", "log", "receipts", "witness", "witness submitter", "gossip", "mirror", "peers", "federation", "crawl state", "crawler", "catalog", "events", "webhooks", "crawls", "sandbox", "api"}; !slices.Equal(names, want) {
		t.Fatalf("parts %v, want %v", names, want)
	}

	var events []string
	rec := func(name string, failOpen bool) part {
		return part{
			name: name,
			open: func(context.Context) error {
				events = append(events, "open "+name)
				if failOpen {
					return errors.New("refused")
				}
				return nil
			},
			close: func() error { events = append(events, "close "+name); return nil },
		}
	}
	ps := []part{rec("a", false), rec("b", false), rec("c", false)}
	opened, err := openParts(context.Background(), ps)
	if err != nil {
		t.Fatal(err)
	}
	if err := closeParts(opened); err != nil {
		t.Fatal(err)
	}
	if want := []string{"open a", "open b", "open c", "close c", "close b", "close a"}; !slices.Equal(events, want) {
		t.Errorf("events %v, want %v", events, want)
	}

	events = nil
	_, err = openParts(context.Background(), []part{rec("a", false), rec("b", false), rec("c", true), rec("d", false)})
	if err == nil || !strings.Contains(err.Error(), "opening c: refused") {
		t.Fatalf("open error %v", err)
	}
	if want := []string{"open a", "open b", "open c", "close b", "close a"}; !slices.Equal(events, want) {
		t.Errorf("after a failed open: %v, want %v", events, want)
	}
}

// hangingRegistry is a registry that never answers: a crawl started
// against it runs until it is cancelled.
type hangingRegistry struct {
	srv       *httptest.Server
	reached   chan struct{} // closed at the first request
	cancelled chan struct{} // closed when the first request is cancelled
	once      sync.Once
}

func newHangingRegistry(t *testing.T) *hangingRegistry {
	h := &hangingRegistry{reached: make(chan struct{}), cancelled: make(chan struct{})}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first := false
		h.once.Do(func() { first = true; close(h.reached) })
		<-r.Context().Done()
		if first {
			close(h.cancelled)
		}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// TestRunStopsAdminCrawl: a crawl the operator starts through the admin
// route runs in the node's crawl part; when Run's context ends, Run
// cancels it and waits for it to record its run before it closes the crawl
// state and the log.
func TestRunStopsAdminCrawl(t *testing.T) {
	reg := newHangingRegistry(t)
	dir := t.TempDir()
	nd, err := New(Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", OperatorToken: "operator-secret",
		Crawl: crawl.Config{Registry: reg.srv.URL, AllowPrivateTargets: true}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := nd.Open(ctx); err != nil { // Run finds it open
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- nd.Run(ctx) }()

	req := httptest.NewRequest("POST", "/api/v1/admin/crawl", nil)
	req.Header.Set("x-histor-operator", "operator-secret")
	rec := httptest.NewRecorder()
	nd.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), `"started":true`) {
		t.Fatalf("admin crawl: %d %s", rec.Code, rec.Body)
	}
	<-reg.reached
	rec = httptest.NewRecorder()
	nd.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/health", nil))
	if !strings.Contains(rec.Body.String(), `"crawl_running":true`) {
		t.Errorf("health during the crawl: %s", rec.Body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	select {
	case <-reg.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the crawl's registry request was never cancelled")
	}
	if nd.Log() != nil {
		t.Error("the log is still open after Run returned")
	}
	st, err := state.Open(nd.StateDir(), nil)
	if err != nil {
		t.Fatalf("the crawl state is still held after Run returned: %v", err)
	}
	defer st.Close()
	runs, err := st.Runs(1)
	if err != nil || len(runs) != 1 || !strings.Contains(runs[0].Error, "context canceled") {
		t.Errorf("recorded runs %+v, %v; want the cancelled crawl recorded before the state closed", runs, err)
	}
}
