package notify

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/node/events"
)

const (
	serverA = "00000000000000aa"
	serverB = "00000000000000bb"
)

// sources stands in for the crawl state, the peer view and the witness.
type sources struct {
	mu       sync.Mutex
	changes  []state.Change
	split    map[string]Split // server id → its split; nil map: no peer view
	evidence []EvidenceItem
}

func (s *sources) ChangeBySeq(seq int64) (*state.Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq < 1 || seq > int64(len(s.changes)) {
		return nil, state.ErrNotFound
	}
	ch := s.changes[seq-1]
	return &ch, nil
}

func (s *sources) SplitView() SplitView {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.split == nil {
		return nil
	}
	return s
}

func (s *sources) SplitServers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id := range s.split {
		ids = append(ids, id)
	}
	return ids
}

func (s *sources) Split(id string) (Split, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.split[id], nil
}

func (s *sources) ListEvidence() ([]EvidenceItem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]EvidenceItem(nil), s.evidence...), nil
}

func (s *sources) set(fn func(s *sources)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s)
}

var at = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func change(seq int64) state.Change {
	return state.Change{TargetID: serverA, Name: "weather", Endpoint: "https://a.example/mcp", Before: "sha256-x", After: "sha256-y",
		At: at, Summary: json.RawMessage(`{"added":["new"]}`), Seq: seq}
}

func split(digestB string) Split {
	return Split{Agreement: "split", Digests: 2, Observers: []Observer{
		{DID: "did:key:a", Endpoint: "https://b.example/mcp", Digest: "sha256-1", ObservedAt: "2026-03-01T12:00:00Z", LabelID: "urn:uuid:1", LeafIndex: 3, HeadSize: 4},
		{DID: "did:key:b", Endpoint: "https://b.example/mcp", Digest: digestB, ObservedAt: "2026-03-01T12:00:05Z", LabelID: "urn:uuid:2", LeafIndex: 7, HeadSize: 9},
	}}
}

// openPart opens a part over src whose loop only runs when kicked.
func openPart(t *testing.T, src *sources) (*Part, ed25519.PublicKey) {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(context.Background(), Config{Dir: t.TempDir(), Key: key, DID: awr.DIDKey(pub), Interval: time.Hour,
		Changes: src, Splits: src, Evidence: src})
	if err != nil {
		t.Fatal(err)
	}
	return p, pub
}

// kinds verifies every event in p's store and lists their kinds, oldest
// first.
func kinds(t *testing.T, p *Part, pub ed25519.PublicKey) []string {
	t.Helper()
	items, err := p.store.Page(0, events.MaxLimit, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, it := range items {
		ev, err := events.Verify(it.Event, pub)
		if err != nil {
			t.Fatalf("event %d: %v", it.Cursor, err)
		}
		out = append(out, ev["kind"].(string))
	}
	return out
}

// TestDerivation: each change record, each new combination of a split and
// each evidence bundle becomes one signed event; a pass over facts already
// reported adds nothing, and a split that ends and comes back is reported
// again.
func TestDerivation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &sources{changes: []state.Change{change(1)}, split: map[string]Split{serverB: split("sha256-2")},
			evidence: []EvidenceItem{{ID: "ab", Origin: "forked.example/log", Kind: "split", Seen: at, Bundle: []byte("bundle")}}}
		p, pub := openPart(t, src)
		defer p.Close()
		synctest.Wait()
		want := []string{events.KindDefinitions, events.KindSplitView, events.KindEquivocation}
		check := func(step string) {
			t.Helper()
			if got := kinds(t, p, pub); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("%s: events %v, want %v", step, got, want)
			}
		}
		check("first pass")

		p.Kick()
		synctest.Wait()
		check("a pass over the same facts")

		src.set(func(s *sources) { s.changes = append(s.changes, change(2)); s.split[serverB] = split("sha256-3") })
		p.Kick()
		synctest.Wait()
		want = append(want, events.KindDefinitions, events.KindSplitView)
		check("a new change and another split")

		src.set(func(s *sources) { delete(s.split, serverB) })
		p.Kick()
		synctest.Wait()
		check("the observers agree")

		src.set(func(s *sources) { s.split[serverB] = split("sha256-3") })
		p.Kick()
		synctest.Wait()
		want = append(want, events.KindSplitView)
		check("the split comes back")
	})
}

// TestDerivationWithoutPeerViewOrWitness: the changes alone make events.
func TestDerivationWithoutPeerViewOrWitness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &sources{changes: []state.Change{change(1)}}
		p, pub := openPart(t, src)
		defer p.Close()
		synctest.Wait()
		if got := kinds(t, p, pub); len(got) != 1 || got[0] != events.KindDefinitions {
			t.Fatalf("events %v, want one of definitions", got)
		}
		if err := p.Stopped(); err != nil {
			t.Errorf("Stopped: %v", err)
		}
	})
}

func get(t *testing.T, rs []httpRoute, path string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for _, r := range rs {
		if strings.HasPrefix(path, r.pattern) {
			w := httptest.NewRecorder()
			r.h.ServeHTTP(w, req)
			return w
		}
	}
	t.Fatalf("no route for %s", path)
	return nil
}

type httpRoute struct {
	pattern string
	h       http.Handler
}

func routesOf(m Mount) []httpRoute {
	var out []httpRoute
	for _, r := range Routes(m) {
		out = append(out, httpRoute{r.Pattern, r.Handler})
	}
	return out
}

// TestRoutesWithoutThePart: the events and the feed answer 503 until the
// part is open; the webhook log asks for the operator first and lists no
// subscription without a deliverer.
func TestRoutesWithoutThePart(t *testing.T) {
	rs := routesOf(Mount{Part: func() *Part { return nil }, Webhooks: func() *Webhooks { return nil },
		Authorize: func(http.ResponseWriter, *http.Request) bool { return true }})
	for _, path := range []string{"/api/v1/security-events", "/security-feed.xml"} {
		w := get(t, rs, path)
		if w.Code != http.StatusServiceUnavailable || w.Body.String() != `{"detail":"no security events"}` {
			t.Errorf("%s: %d %s", path, w.Code, w.Body)
		}
	}
	w := get(t, rs, "/api/v1/admin/webhooks")
	if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != `{"webhooks":[]}` || w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("webhook log: %d %q %v", w.Code, w.Body, w.Header())
	}
	if w := get(t, rs, "/api/v1/admin/webhooks?limit=0"); w.Code != http.StatusBadRequest {
		t.Errorf("limit=0: %d %s", w.Code, w.Body)
	}
	refused := routesOf(Mount{Authorize: func(w http.ResponseWriter, _ *http.Request) bool {
		w.WriteHeader(http.StatusUnauthorized)
		return false
	}})
	if w := get(t, refused, "/api/v1/admin/webhooks"); w.Code != http.StatusUnauthorized {
		t.Errorf("unauthorized: %d", w.Code)
	}
	if w := get(t, routesOf(Mount{}), "/api/v1/admin/webhooks"); w.Code != http.StatusServiceUnavailable {
		t.Errorf("without an operator check: %d", w.Code)
	}
}

// TestRoutesOfThePart: the page and its cursor, the bounds of its
// parameters, and the feed over the public base.
func TestRoutesOfThePart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &sources{changes: []state.Change{change(1), change(2)}}
		p, _ := openPart(t, src)
		defer p.Close()
		synctest.Wait()
		rs := routesOf(Mount{Part: func() *Part { return p }, PublicBase: func() string { return "https://obs.example/" },
			FeedTime: func() string { return "never" }})

		var page EventsPage
		w := get(t, rs, "/api/v1/security-events?after=1")
		if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil || w.Code != http.StatusOK || len(page.Events) != 1 || page.NextCursor != 2 {
			t.Fatalf("after=1: %d %s", w.Code, w.Body)
		}
		if w.Header().Get("Cache-Control") != "no-cache" {
			t.Errorf("Cache-Control %q", w.Header().Get("Cache-Control"))
		}
		w = get(t, rs, "/api/v1/security-events?after=2")
		if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil || len(page.Events) != 0 || page.NextCursor != 2 {
			t.Errorf("after=2: %s", w.Body)
		}
		for path, detail := range map[string]string{
			"/api/v1/security-events?limit=201": `{"detail":"limit must be between 1 and 200"}`,
			"/api/v1/security-events?after=01":  "after",
			"/security-feed.xml?watch=xyz":      "watch",
		} {
			if w := get(t, rs, path); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), detail) {
				t.Errorf("%s: %d %s", path, w.Code, w.Body)
			}
		}
		w = get(t, rs, "/security-feed.xml?watch="+serverA)
		body := w.Body.String()
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/atom+xml" ||
			!strings.Contains(body, `<link rel="self" href="https://obs.example/security-feed.xml"/>`) ||
			strings.Count(body, "<entry>") != 2 || !strings.Contains(body, "weather: tool definitions changed") {
			t.Errorf("feed: %d %s", w.Code, body)
		}
		if w := get(t, rs, "/security-feed.xml?watch="+serverB); !strings.Contains(w.Body.String(), "<updated>never</updated>") {
			t.Errorf("empty feed: %s", w.Body)
		}
	})
}
