package views

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/catalog/catalogtest"
)

// newFixture is a catalog over catalogtest's fixture, at catalogtest.Now.
func newFixture(t *testing.T) (*catalog.Catalog, *catalogtest.Fixture) {
	t.Helper()
	dir := t.TempDir()
	st := catalogtest.OpenStore(t, filepath.Join(dir, "state"))
	lg := catalogtest.OpenLog(t, filepath.Join(dir, "log"))
	f := catalogtest.Build(t, st, lg)
	c, err := catalog.New(catalog.Options{Store: st, Log: lg, Patterns: scan.Default(),
		Now: func() time.Time { return catalogtest.Now }})
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}

// plainServers is the /api/v1/servers answer as encoding/json writes it,
// what AppendServers must reproduce byte for byte.
func plainServers(t *testing.T, total int, offset, limit uint64, page []*catalog.Server, now time.Time) []byte {
	t.Helper()
	rows := make([]Summary, len(page))
	for i, s := range page {
		rows[i] = Summarize(s, now)
	}
	b, err := canon.MarshalPlain(struct {
		Total   int       `json:"total"`
		Offset  uint64    `json:"offset"`
		Limit   uint64    `json:"limit"`
		Servers []Summary `json:"servers"`
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
	c, f := newFixture(t)
	var pages [][]*catalog.Server
	for _, st := range []catalog.State{catalog.StateAll, catalog.StatePinned, catalog.StateChanged, catalog.StateFlagged, catalog.StateUnobserved} {
		_, page := c.Search("", st, 200, 0)
		pages = append(pages, page)
	}
	pages = append(pages, nil, []*catalog.Server{oddServer(), c.ByID(f.Delisted), c.ByID(f.Skipped)})
	day := 24 * time.Hour
	for _, now := range []time.Time{catalogtest.Now, catalogtest.Now.Add(40 * day), catalogtest.Now.Add(-400 * day), {}} {
		for pass := range 2 { // the first encodes each summary, the second reads the cache
			for i, page := range pages {
				want := plainServers(t, len(page)+3, 7, 200, page, now)
				got, err := AppendServers(nil, len(page)+3, 7, 200, page, now)
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
		want, err := canon.MarshalPlain(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Errorf("%q: got %s, want %s", s, got[1:], want)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestParseServersQuery: the bounds and the state names, the split filter
// among them, and which parameter an error names.
func TestParseServersQuery(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		want  ServersQuery
		param string // the parameter the error names; "" for none
	}{
		{"", ServersQuery{State: catalog.StateAll, Limit: DefaultServersLimit}, ""},
		{"q=x&state=split&limit=200&offset=10000000", ServersQuery{Q: "x", State: StateSplit, Limit: 200, Offset: 10_000_000}, ""},
		{"state=pinned", ServersQuery{State: catalog.StatePinned, Limit: DefaultServersLimit}, ""},
		{"limit=0", ServersQuery{}, "limit"},
		{"limit=201", ServersQuery{}, "limit"},
		{"offset=10000001", ServersQuery{}, "offset"},
		{"state=bogus", ServersQuery{}, "state"},
		{"state=" + strings.Repeat("a", 21), ServersQuery{}, "state"},
		{"q=" + strings.Repeat("é", 201), ServersQuery{}, "q"},
	} {
		got, err := ParseServersQuery(tc.raw)
		var pe *httpx.ParamError
		switch {
		case tc.param == "" && err != nil:
			t.Errorf("?%s: %v", tc.raw, err)
		case tc.param == "" && got != tc.want:
			t.Errorf("?%s = %+v, want %+v", tc.raw, got, tc.want)
		case tc.param != "" && (!errors.As(err, &pe) || pe.Name != tc.param):
			t.Errorf("?%s: error %v, want one naming %s", tc.raw, err, tc.param)
		}
	}
}
