package observer

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/histor-observer/histor/sandbox"
)

// BenchmarkObserveEverything is one observation of server-everything with
// its install already cached (download excluded), beside a bare
// `runsc --rootless --network=none do true` measured in the same run. It
// reports both and the difference.
func BenchmarkObserveEverything(b *testing.B) {
	needNPM(b)
	o := newTestObserver(b, Config{InstallCache: b.TempDir()})
	if obs, _ := o.Observe(context.Background(), everythingSpec, Options{}); obs.Status != sandbox.StatusOK {
		b.Fatalf("warm-up: status %s (%s)", obs.Status, obs.Detail)
	}
	var base, full time.Duration
	for b.Loop() {
		began := time.Now()
		if out, err := exec.Command("runsc", "--rootless", "--network=none", "do", "true").CombinedOutput(); err != nil {
			b.Fatalf("runsc do true: %v: %s", err, out)
		}
		base += time.Since(began)
		began = time.Now()
		obs, err := o.Observe(context.Background(), everythingSpec, Options{})
		if err != nil || obs.Status != sandbox.StatusOK {
			b.Fatalf("status %s (%s) %v", obs.Status, obs.Detail, err)
		}
		full += time.Since(began)
	}
	n := float64(b.N)
	b.ReportMetric(base.Seconds()/n, "s-baseline")
	b.ReportMetric(full.Seconds()/n, "s-observation")
	b.ReportMetric((full-base).Seconds()/n, "s-beyond-baseline")
}
