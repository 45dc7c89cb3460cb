package audit_test

import (
	"testing"

	"github.com/histor-observer/histor/node/audit"
)

// BenchmarkAudit measures one audit of a 1,000-label log on loopback: the head and a label,
// then the whole tree through the tiles.
func BenchmarkAudit(b *testing.B) {
	tl := newTestLog(b, "")
	tl.appendLabels(b, 1000)
	b.Run("head+label", func(b *testing.B) {
		for b.Loop() {
			if _, err := audit.Run(b.Context(), audit.Options{Base: tl.srv.URL, LabelID: tl.ids[500]}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tiles", func(b *testing.B) {
		for b.Loop() {
			if _, err := audit.Run(b.Context(), audit.Options{Base: tl.srv.URL, Tiles: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
