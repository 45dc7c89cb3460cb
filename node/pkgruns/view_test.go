package pkgruns

import (
	"context"
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/queue"
)

func testView(t *testing.T, runs RunReader, cur *registry.Curated) (*View, ed25519.PublicKey) {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC) }
	return NewView(ViewConfig{Runs: runs, Curated: cur, Key: key, DID: awr.DIDKey(pub), Now: now}), pub
}

// TestCensusCountsEveryPackage: the census is signed and counts the stored
// package targets and the curated ones the registry does not list, observed
// or not.
func TestCensusCountsEveryPackage(t *testing.T) {
	runs := newFakeRuns(npmTarget("a", "npm:tiny-weather"))
	rec := &fakeRecorder{runs: runs}
	p := testPart(runs, rec, &commits{})
	res := queue.Result{JobID: "j1", Target: "npm:tiny-weather@1.0.0", Observation: observation(t, "npm:tiny-weather@1.0.0", sandbox.StatusOK)}
	if err := p.handle(context.Background(), res); err != nil {
		t.Fatal(err)
	}
	cur := &registry.Curated{Targets: []registry.Target{npmTarget("z", "npm:curated-only")}, Rank: map[string]int{"z": 0}}
	v, pub := testView(t, runs, cur)
	doc, err := v.Census()
	if err != nil {
		t.Fatal(err)
	}
	body, err := format.VerifyDocument(doc, pub, sandbox.CensusType)
	if err != nil {
		t.Fatalf("census does not verify: %v", err)
	}
	if body["issuer"] != awr.DIDKey(pub) {
		t.Errorf("census issuer %v", body["issuer"])
	}
	for _, want := range []string{`"npm:tiny-weather"`, `"npm:curated-only"`, `"1.0.0"`} {
		if !contains(doc, want) {
			t.Errorf("census lacks %s: %s", want, doc)
		}
	}
}

// TestMember: a package server's member names its last run and versions;
// a remote server has none.
func TestMember(t *testing.T) {
	runs := newFakeRuns(npmTarget("a", "npm:tiny-weather"))
	p := testPart(runs, &fakeRecorder{runs: runs}, &commits{})
	res := queue.Result{JobID: "j1", Target: "npm:tiny-weather@1.0.0", Observation: observation(t, "npm:tiny-weather@1.0.0", sandbox.StatusOK)}
	if err := p.handle(context.Background(), res); err != nil {
		t.Fatal(err)
	}
	v, _ := testView(t, runs, nil)
	m, err := v.Member(&catalog.Server{Target: state.Target{Target: npmTarget("a", "npm:tiny-weather")}})
	if err != nil {
		t.Fatal(err)
	}
	if m == nil || m.Key != "npm:tiny-weather" || m.LastRun == nil || m.LastRun.Version != "1.0.0" || len(m.Versions) != 1 {
		t.Fatalf("member %+v", m)
	}
	if m.LastRun.BehaviourURL == nil || *m.LastRun.BehaviourURL != "/api/v1/behaviour/"+*m.LastRun.Behaviour {
		t.Errorf("behaviour URL %v of %v", m.LastRun.BehaviourURL, m.LastRun.Behaviour)
	}
	remote := &catalog.Server{Target: state.Target{Target: registry.Target{ID: "r", Endpoint: "https://example.com/mcp", Transport: registry.TransportStreamable}}}
	if m, err := v.Member(remote); m != nil || err != nil {
		t.Errorf("remote server's member %+v, %v; want none", m, err)
	}
}

// TestCensusRoute: the route answers the census with no-store, and 503
// while there is no view (no crawl state).
func TestCensusRoute(t *testing.T) {
	var view *View
	routes := Routes(func() *View { return view }, nil)
	if len(routes) != 1 || routes[0].Pattern != "/api/v1/census" {
		t.Fatalf("routes %+v", routes)
	}
	h := routes[0].Handler
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/census", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Body.String() != `{"detail":"this node serves no crawl state"}` {
		t.Errorf("without a view: %d %q", rec.Code, rec.Body)
	}
	view, _ = testView(t, newFakeRuns(), nil)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/census", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-store" || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("with a view: %d %v", rec.Code, rec.Header())
	}
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }
