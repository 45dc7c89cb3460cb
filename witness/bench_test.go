package witness_test

import (
	"context"
	"testing"
)

// BenchmarkAddCheckpoint: one head after another, each a size larger, every one cosigned and
// synced to disk before the next. Run with -benchtime Nx, N at most 512.
func BenchmarkAddCheckpoint(b *testing.B) {
	l := newTestLog(b, "example.test/log")
	tw := newWitness(b, l)
	tw.mustCosign(b, l.request(b, 0, 1000))
	bodies := make([][]byte, 512)
	for i := range bodies {
		bodies[i] = l.request(b, int64(1000+i), int64(1001+i))
	}
	i := 0
	for b.Loop() {
		res, err := tw.AddCheckpoint(context.Background(), bodies[i%len(bodies)])
		if err != nil || (i < len(bodies) && res.Status != 200) {
			b.Fatalf("%d: %d %v", i, res.Status, err)
		}
		i++
	}
}
