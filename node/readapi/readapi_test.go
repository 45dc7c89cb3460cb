package readapi

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/catalog/catalogtest"
	"github.com/histor-observer/histor/node/views"
)

// fakePeers is a peer view in which the servers of splits are split.
type fakePeers struct {
	splits map[string]views.Split
	broken string // a split server whose split does not read
}

func (p fakePeers) Members(string) ([]any, map[string]any, error) { return nil, nil, nil }

func (p fakePeers) SplitServers() []string {
	var ids []string
	for id := range p.splits {
		ids = append(ids, id)
	}
	if p.broken != "" {
		ids = append(ids, p.broken)
	}
	return ids
}

func (p fakePeers) Split(id string) (views.Split, error) {
	if id == p.broken {
		return views.Split{}, errors.New("unreadable")
	}
	return p.splits[id], nil
}

// serve routes r through the part's routes mounted on m.
func serve(t *testing.T, m Mount, path string) (*http.Response, string) {
	t.Helper()
	router := httpx.NewRouter(append(RecordRoutes(m), SummaryRoutes(m)...))
	req := httptest.NewRequest(http.MethodGet, path, nil)
	mt := router.Lookup(req)
	if mt == nil {
		t.Fatalf("no route for %s", path)
	}
	h, _ := mt.Handler(http.MethodGet)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Result(), string(body)
}

func fixtureMount(t *testing.T, peers views.Peers) (Mount, *catalogtest.Fixture) {
	t.Helper()
	dir := t.TempDir()
	st := catalogtest.OpenStore(t, filepath.Join(dir, "state"))
	lg := catalogtest.OpenLog(t, filepath.Join(dir, "log"))
	f := catalogtest.Build(t, st, lg)
	clock := func() time.Time { return catalogtest.Now }
	c, err := catalog.New(catalog.Options{Store: st, Log: lg, Patterns: scan.Default(), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	md := &Model{Catalog: c, PublicBase: "https://observer.example/", CrawlInterval: time.Hour, Now: clock}
	return Mount{
		Model:   func() *Model { return md },
		Sources: func() views.Sources { return views.Sources{Peers: peers} },
		Crawl:   func() views.CrawlStats { return views.CrawlStats{Running: true} },
		Logger:  slog.New(slog.DiscardHandler),
	}, f
}

// TestNoModel: without a read model every route answers 503 with a detail.
func TestNoModel(t *testing.T) {
	m := Mount{Model: func() *Model { return nil }}
	for _, p := range []string{"/api/v1/servers", "/api/v1/servers/x", "/api/v1/changes", "/api/v1/changes/1",
		"/api/v1/stats", "/api/v1/stats/hosts", "/api/v1/badges/log", "/badge/x.svg", "/feed.xml"} {
		resp, body := serve(t, m, p)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, `"detail"`) {
			t.Errorf("%s: %d %s", p, resp.StatusCode, body)
		}
	}
}

// TestSplitsFromPeers: state=split lists what the peer view holds split,
// and the feed leads with those splits, skipping one that does not read.
func TestSplitsFromPeers(t *testing.T) {
	peers := fakePeers{broken: "0000000000000000"}
	m, f := fixtureMount(t, &peers)
	peers.splits = map[string]views.Split{f.Stable: {Observers: 3, Digests: 2, Since: "2026-09-23T10:00:00Z"}}
	_, body := serve(t, m, "/api/v1/servers?state=split")
	var list struct {
		Total   int
		Servers []struct{ ID string }
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil || list.Total != 1 || list.Servers[0].ID != f.Stable {
		t.Fatalf("split servers: %v %s", err, body)
	}
	_, feed := serve(t, m, "/feed.xml")
	split := "<id>https://observer.example/api/v1/servers/" + f.Stable + "#split-2026-09-23T10:00:00Z</id>"
	if !strings.Contains(feed, split) || !strings.Contains(feed, "3 observers hold 2 different tool sets") ||
		strings.Index(feed, "#split-") > strings.Index(feed, "/api/v1/changes/") {
		t.Errorf("feed lacks the split first: %s", feed)
	}
}

// TestStatsCrawl: /api/v1/stats carries the crawl's state with the
// model's interval.
func TestStatsCrawl(t *testing.T) {
	m, _ := fixtureMount(t, nil)
	_, body := serve(t, m, "/api/v1/stats")
	var st views.Stats
	if err := json.Unmarshal([]byte(body), &st); err != nil || !st.Crawl.Running || st.Crawl.IntervalSeconds != 3600 {
		t.Errorf("stats: %v %s", err, body)
	}
}
