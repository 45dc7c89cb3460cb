package catalog_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/catalog/catalogtest"
)

// BenchmarkSearch20k is one /api/v1/servers search over a 20,000-server
// catalog without HTTP, per kind of query the reading-API benchmark sends.
func BenchmarkSearch20k(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a 20,000-server crawl state; not in -short")
	}
	_, c := populated(b, 20_000)
	for _, q := range []struct {
		name, q string
		st      catalog.State
		limit   int
	}{
		{"one", "server-12345", catalog.StateAll, 50},
		{"forty", "host123.", catalog.StateAll, 50},
		{"changed", "example", catalog.StateChanged, 50},
		{"all", "Title of", catalog.StateAll, 200},
		{"none", "no-such-server", catalog.StateAll, 50},
		{"filter", "", catalog.StatePinned, 50},
	} {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				c.Search(q.q, q.st, q.limit, 0)
			}
		})
	}
}

// TestSearchPaths checks both ways a search runs (the suffix array for a
// text with few occurrences, one pass of the list for a common one)
// against a plain filter of the list, for every state and several pages.
func TestSearchPaths(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 1,500-server crawl state; not in -short")
	}
	_, c := populated(t, 1500)
	// "example" occurs three times a server (4,500 > the sparse bound),
	// "e" more; the others fewer.
	for _, q := range []string{"example", "e", "TITLE of", "server-00", "host01", "/mcp/0149", "00001", "x", "zzz"} {
		for st := range catalog.State(5) {
			_, list := c.Search("", st, 1500, 0)
			var want []*catalog.Server
			for _, s := range list {
				hay := strings.ToLower(s.Name + "\x00" + s.Endpoint + "\x00" + s.Title)
				if strings.Contains(hay, strings.ToLower(q)) {
					want = append(want, s)
				}
			}
			for _, pg := range [][2]int{{50, 0}, {200, 0}, {7, 3}, {50, 1400}, {10, 2000}} {
				total, page := c.Search(q, st, pg[0], pg[1])
				w := want[min(len(want), pg[1]):min(len(want), pg[1]+pg[0])]
				if total != len(want) || !slices.Equal(idsOf(page), idsOf(w)) {
					t.Errorf("q %q state %s page %v: total %d (%d rows), want %d (%d rows)", q, st, pg, total, len(page), len(want), len(w))
				}
			}
		}
	}
}

// populated is a catalog over a crawl state and a log of n servers (catalogtest.Populate),
// and its store.
func populated(tb testing.TB, n int) (*state.Store, *catalog.Catalog) {
	tb.Helper()
	dir := tb.TempDir()
	st := catalogtest.OpenStore(tb, filepath.Join(dir, "state"))
	lg := catalogtest.OpenLog(tb, filepath.Join(dir, "log"))
	catalogtest.Populate(tb, st, lg, n)
	c, err := catalog.New(catalog.Options{Store: st, Log: lg})
	if err != nil {
		tb.Fatal(err)
	}
	return st, c
}
