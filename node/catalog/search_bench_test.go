package catalog_test

import (
	"path/filepath"
	"testing"

	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/catalog/catalogtest"
)

// BenchmarkSearch20k is one /api/v1/servers search over a 20,000-server
// catalog without HTTP, per kind of query the reading-API benchmark sends.
func BenchmarkSearch20k(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a 20,000-server crawl state; not in -short")
	}
	dir := b.TempDir()
	st := catalogtest.OpenStore(b, filepath.Join(dir, "state"))
	lg := catalogtest.OpenLog(b, filepath.Join(dir, "log"))
	catalogtest.Populate(b, st, lg, 20_000)
	c, err := catalog.New(catalog.Options{Store: st, Log: lg})
	if err != nil {
		b.Fatal(err)
	}
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
