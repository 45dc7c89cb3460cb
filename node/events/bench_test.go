package events

import (
	"fmt"
	"testing"
)

// BenchmarkPage reads one 100-event page out of 10,000, plain and watching
// one server of 100.
func BenchmarkPage(b *testing.B) {
	s, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	sg, _ := newSigner(&testing.T{})
	for i := range 10_000 {
		tg := fmt.Sprintf("%016x", i%100)
		doc, id, err := sg.Sign(Fact{Target: tg, Kind: KindDefinitions, Evidence: map[string]any{"n": i}})
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Append(doc, id, tg); err != nil {
			b.Fatal(err)
		}
	}
	for _, w := range []struct {
		name  string
		watch []string
	}{{"all", nil}, {"watch", []string{fmt.Sprintf("%016x", 7)}}} {
		b.Run(w.name, func(b *testing.B) {
			for b.Loop() {
				if items, err := s.Page(5_000, 100, w.watch); err != nil || len(items) == 0 {
					b.Fatal(len(items), err)
				}
			}
		})
	}
}
