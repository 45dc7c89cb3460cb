package crawl

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestGatherWaitsBatchWait: the committer's batch fills with what arrives
// within batchWait of its first item, stops at its bound without waiting,
// and ends early when the input closes; on synctest's clock, exactly.
func TestGatherWaitsBatchWait(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sends  []time.Duration // when each item after the first arrives
		max    int
		close  bool
		want   int
		waited time.Duration
	}{
		{"timer ends the batch", []time.Duration{5 * time.Millisecond, 15 * time.Millisecond, 30 * time.Millisecond}, 10, false, 3, batchWait},
		{"bound ends the batch", []time.Duration{time.Millisecond, 2 * time.Millisecond}, 3, false, 3, 2 * time.Millisecond},
		{"closed input ends the batch", []time.Duration{time.Millisecond}, 10, true, 2, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				in, stop, done := make(chan *prepared), make(chan struct{}), make(chan struct{})
				start := time.Now()
				go func() {
					defer close(done)
					for _, at := range tc.sends {
						select {
						case <-time.After(at - time.Since(start)):
						case <-stop:
							return
						}
						select {
						case in <- &prepared{}:
						case <-stop: // the batch already ended
							return
						}
					}
					if tc.close {
						close(in)
					}
				}()
				got := gather(in, []*prepared{{}}, tc.max)
				if len(got) != tc.want || time.Since(start) != tc.waited {
					t.Errorf("%d items after %v, want %d after %v", len(got), time.Since(start), tc.want, tc.waited)
				}
				close(stop)
				<-done
			})
		})
	}
}
