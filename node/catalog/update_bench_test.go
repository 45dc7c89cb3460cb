package catalog_test

import (
	"path/filepath"
	"testing"

	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/catalog/catalogtest"
)

// BenchmarkUpdate20k is bringing a 20,000-server catalog up to date after
// a commit: reading the whole store again (reload, the baseline), or the
// targets written alone: one (a package run's result) and all of them (a
// crawl that attempted every target).
func BenchmarkUpdate20k(b *testing.B) {
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
	targets, err := st.Targets()
	if err != nil {
		b.Fatal(err)
	}
	all := make([]string, len(targets))
	for i, t := range targets {
		all[i] = t.ID
	}
	b.Run("reload", func(b *testing.B) {
		for b.Loop() {
			if err := c.Reload(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, u := range []struct {
		name string
		ids  []string
	}{{"one", all[:1]}, {"all", all}} {
		b.Run(u.name, func(b *testing.B) {
			for b.Loop() {
				if err := c.Update(u.ids); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
