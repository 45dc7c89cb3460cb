package node

import (
	"bytes"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/catalog/catalogtest"
)

// plainServers is the /api/v1/servers answer as encoding/json writes it,
// what appendServers must reproduce byte for byte.
func plainServers(t *testing.T, total int, offset, limit uint64, page []*catalog.Server, now time.Time) []byte {
	t.Helper()
	rows := make([]serverSummary, len(page))
	for i, s := range page {
		rows[i] = summarizeServer(s, now)
	}
	b, err := encodeJSON(struct {
		Total   int             `json:"total"`
		Offset  uint64          `json:"offset"`
		Limit   uint64          `json:"limit"`
		Servers []serverSummary `json:"servers"`
	}{total, offset, limit, rows})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// oddServer is a server whose texts need every escape encoding/json makes.
func oddServer() *catalog.Server {
	day := 24 * time.Hour
	t := catalogtest.Target("io.example/odd\"<&>\u2028", "https://odd.example.com/mcp?a=1&b=<2>")
	t.Title, t.Version = "tab\there \\ \x01 \xff bad \u2029 · ok", "2.0 \"beta\""
	return &catalog.Server{
		Target: state.Target{Target: t, Status: "http-500", Detail: "line\nbreak </script>", LastCrawled: catalogtest.Now},
		Obs: state.Observation{TargetID: t.ID, Status: "ok", Subject: "sha256-s", ToolSetDigest: "sha256-t", ToolCount: 3,
			LastOK: catalogtest.Now.Add(-day), UnchangedSince: catalogtest.Now.Add(-3 * day), FirstPinned: catalogtest.Now.Add(-9 * day),
			OKObservations: 7, Attempts: 9, BlockMatches: 1},
		Observed: true, ChangeCount: 2,
	}
}

// TestServersEncodingCached checks that answers assembled from the cached
// summaries are the bytes encoding/json makes of the same values, for
// every filter, for clocks that age every badge, and from a warm cache.
func TestServersEncodingCached(t *testing.T) {
	rn := newReadNode(t)
	var pages [][]*catalog.Server
	for _, st := range []catalog.State{catalog.StateAll, catalog.StatePinned, catalog.StateChanged, catalog.StateFlagged, catalog.StateUnobserved} {
		_, page := rn.c.Search("", st, 200, 0)
		pages = append(pages, page)
	}
	pages = append(pages, nil, []*catalog.Server{oddServer(), rn.c.ByID(rn.f.Delisted), rn.c.ByID(rn.f.Skipped)})
	day := 24 * time.Hour
	for _, now := range []time.Time{catalogtest.Now, catalogtest.Now.Add(40 * day), catalogtest.Now.Add(-400 * day), {}} {
		for pass := range 2 { // the first encodes each summary, the second reads the cache
			for i, page := range pages {
				want := plainServers(t, len(page)+3, 7, 200, page, now)
				got, err := appendServers(nil, len(page)+3, 7, 200, page, now)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("now %v pass %d page %d:\n got %s\nwant %s", now, pass, i, got, want)
				}
			}
		}
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "changed", "unchanged 30d · 09-23", "pinned 2026-09-23", `q"uote`, `back\slash`,
		"<&>", "\x00\x1f\x7f", "\u2028\u2029", "a\u2028b", "\xff\xfe", "\ufffd", "tab\t", "é日本"} {
		want, err := encodeJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Errorf("%q: got %s, want %s", s, got[1:], want)
		}
	}
}
