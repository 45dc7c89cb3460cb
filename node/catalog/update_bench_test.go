package catalog_test

import "testing"

// BenchmarkUpdate20k is bringing a 20,000-server catalog up to date after
// a commit: reading the whole store again (reload, the baseline), or the
// targets written alone: one (a package run's result) and all of them (a
// crawl that attempted every target).
func BenchmarkUpdate20k(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a 20,000-server crawl state; not in -short")
	}
	st, c := populated(b, 20_000)
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
