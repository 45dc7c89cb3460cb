package node

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/crawl/state"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/check"
	"github.com/histor-observer/histor/node/check/checktest"
)

// The fixture's tool sets, endpoint and days (checktest's, which both /check suites seed).
const (
	toolsNow   = checktest.ToolsNow
	toolsOld   = checktest.ToolsOld
	toolsNew   = checktest.ToolsNew
	toolsFloat = checktest.ToolsFloat
	endpointOK = checktest.EndpointOK
)

var day1, day5, day9 = checktest.Day1, checktest.Day5, checktest.Day9

// checkFixture is a node whose /check reads a crawl state of three targets:
// "one" (observed, changed once), "two" (never observed) and "three"
// (delisted; its latest attempt failed).
type checkFixture struct {
	node *Node
	st   *state.Store
	h    http.Handler
	pub  ed25519.PublicKey
	cat  *catalog.Catalog // over st; reload it after committing to st
}

func newCheckFixture(t testing.TB, edit func(*Config)) *checkFixture {
	t.Helper()
	st, err := state.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := Config{
		DataDir: t.TempDir(), LogOrigin: "test.example/log", Now: fixedNow, PublicURL: "https://observer.example",
	}
	if edit != nil {
		edit(&cfg)
	}
	nd, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := nd.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nd.Close() })
	f := &checkFixture{node: nd, st: st, h: nd.Handler(), pub: nd.id.logKey.Public().(ed25519.PublicKey)}
	f.seed(t)
	c, err := catalog.New(catalog.Options{Store: st, Log: nd.Log(), Patterns: scan.Default(), Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	f.cat = c
	f.editChecker(t, func(cfg *check.Config) {
		cfg.Targets, cfg.Reports, cfg.Patterns = check.CatalogTargets{Catalog: c}, check.CatalogReports{Catalog: c}, scan.Default()
	})
	return f
}

// editChecker replaces the fixture node's checker with one made from the
// node's own configuration of it as edit changes it.
func (f *checkFixture) editChecker(t testing.TB, edit func(*check.Config)) {
	t.Helper()
	cfg := f.node.checkConfig()
	edit(&cfg)
	c, err := check.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.node.api.Load().check = c
}

// seed writes the targets, their observations and timelines, and the
// evidence of the current set at "one" into the node's log.
func (f *checkFixture) seed(t testing.TB) {
	t.Helper()
	one := fixtureTarget("io.example/one", endpointOK, "ok", false)
	dOld, dNow := digestOf(t, toolsOld), digestOf(t, toolsNow)
	commit := func(u state.Update) {
		if err := f.st.Commit(u); err != nil {
			t.Fatal(err)
		}
	}
	commit(state.Update{Span: &state.Span{TargetID: one.ID, From: day1, Until: day1.Add(72 * time.Hour), Count: 4, Status: "ok", ToolSetDigest: dOld, SubjectDigest: "sha256-old"}})
	commit(state.Update{Span: &state.Span{TargetID: one.ID, From: day1.Add(96 * time.Hour), Until: day5, Count: 1, Status: "timeout"}})
	commit(state.Update{Target: one, Observation: &state.Observation{
		TargetID: one.ID, Status: "ok", ObservedAt: day9, Subject: "sha256-now", ToolSetDigest: dNow, ToolCount: 1,
		LastOK: day9, UnchangedSince: day5, FirstPinned: day1, OKObservations: 9, Attempts: 10, Changes: 1,
	}, Span: &state.Span{TargetID: one.ID, From: day5, Until: day9, Count: 5, Status: "ok", ToolSetDigest: dNow, SubjectDigest: "sha256-now"}})
	commit(state.Update{Target: fixtureTarget("io.example/two", "https://two.example/mcp", "timeout", false)})
	three := fixtureTarget("io.example/three", "https://three.example/mcp", "http-500", true)
	three.LastCrawled = day5
	commit(state.Update{Target: three, Observation: &state.Observation{
		TargetID: three.ID, Status: "http-500", Subject: "sha256-three", ToolSetDigest: dOld, ToolCount: 1, LastOK: day1, OKObservations: 1,
	}})
	ev := []hlog.Evidence{{Kind: "toolsets", Body: canonicalTools(t, toolsNow)}}
	if _, err := f.node.Log().Append(context.Background(), []hlog.Entry{{ID: labelID(0), Label: makeLabel(0)}}, ev); err != nil {
		t.Fatal(err)
	}
}

// post sends body to /api/v1/check from remote (host:port) with extra
// headers ("Name: value").
func (f *checkFixture) post(t testing.TB, remote, body string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	return checktest.Post(t, f.h, remote, body, headers...)
}

// answer posts body and verifies the signed answer, returning it decoded.
func (f *checkFixture) answer(t testing.TB, remote, body string) map[string]any {
	t.Helper()
	return checktest.Answer(t, f.h, f.pub, remote, body)
}

// The helpers both /check suites use.
var (
	digestOf          = checktest.DigestOf
	canonicalTools    = checktest.CanonicalTools
	verifyCheckAnswer = checktest.VerifyAnswer
	mustJSON          = checktest.MustJSON
	fixtureTarget     = checktest.Target
	body              = checktest.Body
)

// TestCheckAnswerShape: the node's checker answers with the node's issuer,
// public URL, peer view and log head (node/check's own tests prove each
// match and note).
func TestCheckAnswerShape(t *testing.T) {
	f := newCheckFixture(t, nil)
	dNow, dOld := digestOf(t, toolsNow), digestOf(t, toolsOld)
	id := mtl.ServerID("io.example/one", endpointOK)
	a := f.answer(t, "192.0.2.1:4000", body(`"endpoint":"`+endpointOK+`"`, `"tools":`+toolsOld))
	head := f.node.Log().Latest()
	want := map[string]any{
		"type": "histor.check/v1", "checkedAt": "2026-09-23T09:13:04Z", "issuer": f.node.DID(),
		"query": map[string]any{"endpoint": endpointOK, "toolSetDigest": dOld},
		"target": map[string]any{
			"id": id, "name": "io.example/one", "endpoint": endpointOK,
			"page": "https://observer.example/s/" + id, "badge": "https://observer.example/badge/" + id + ".svg",
			"lastStatus": "ok", "listed": true,
		},
		"observed": map[string]any{
			"toolSetDigest": dNow, "subjectDigest": "sha256-now", "toolCount": 1.0,
			"firstPinned": "2026-09-01T06:00:00Z", "unchangedSince": "2026-09-05T06:00:00Z",
			"lastObserved": "2026-09-09T06:00:00Z", "observations": 9.0, "changes": 1.0,
		},
		"seenBefore": map[string]any{"first_seen": "2026-09-01T06:00:00Z", "last_seen": "2026-09-04T06:00:00Z", "observations": 4.0},
		"match":      "previously-observed",
		// The fixture's state was written without a crawl: nothing in the peer view.
		"observers": []any{},
		"agreement": map[string]any{"status": "unobserved", "counts": map[string]any{
			"observers": 0.0, "withDigest": 0.0, "digests": 0.0, "agreeing": 0.0}},
		"log": map[string]any{
			"treeSize": float64(head.Size), "rootHash": hex.EncodeToString(head.Root[:]),
			"timestamp": head.Time.UTC().Format("2006-01-02T15:04:05Z"),
		},
	}
	ps := a["patternScan"].(map[string]any)
	delete(a, "patternScan")
	delete(a, "signature")
	delete(a, "note")
	if got, wantJSON := mustJSON(t, a), mustJSON(t, want); got != wantJSON {
		t.Errorf("answer\n got %s\nwant %s", got, wantJSON)
	}
	if ps["toolSetDigest"] != dOld || ps["patternSet"] != scan.Default().Digest() || ps["block"] != 0.0 || ps["advise"] != 0.0 {
		t.Errorf("patternScan = %v", ps)
	}
}

// TestCheckPreflight: through the node's router, /api/v1/check answers
// its CORS preflight and refuses other methods with its Allow, while the
// other routes still take only GET and HEAD.
func TestCheckPreflight(t *testing.T) {
	f := newCheckFixture(t, nil)
	req := httptest.NewRequest(http.MethodOptions, "/api/v1/check", nil)
	req.Header.Set("Origin", "https://desk.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type")
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	h := w.Header()
	if w.Code != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" ||
		h.Get("Access-Control-Allow-Methods") != "POST, OPTIONS" || h.Get("Access-Control-Allow-Headers") != "Content-Type" ||
		h.Get("Access-Control-Max-Age") == "" || w.Body.Len() != 0 {
		t.Errorf("preflight: %d %v %q", w.Code, h, w.Body)
	}
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		req := httptest.NewRequest(m, "/api/v1/check", nil)
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, req)
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST, OPTIONS" {
			t.Errorf("%s: %d, Allow %q", m, w.Code, w.Header().Get("Allow"))
		}
	}
	// The other routes still take only GET and HEAD.
	req = httptest.NewRequest(http.MethodPost, "/api/v1/issuer", nil)
	w = httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /api/v1/issuer: %d", w.Code)
	}
}
