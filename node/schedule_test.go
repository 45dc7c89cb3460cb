package node

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/histor-observer/histor/crawl"
)

// fakeCrawler records when each crawl started and lets the test decide how
// long one takes.
type fakeCrawler struct {
	mu      sync.Mutex
	starts  []time.Time
	takes   time.Duration // how long a crawl runs, in bubble time
	ended   []error       // how each crawl ended
	running int
}

func (f *fakeCrawler) run(ctx context.Context) (*crawl.Summary, error) {
	f.mu.Lock()
	f.starts = append(f.starts, time.Now())
	f.running++
	f.mu.Unlock()
	var err error
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(f.takes):
	}
	f.mu.Lock()
	f.running--
	f.ended = append(f.ended, err)
	f.mu.Unlock()
	return &crawl.Summary{}, err
}

func (f *fakeCrawler) snapshot() (starts []time.Time, ended []error, running int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.starts...), append([]error(nil), f.ended...), f.running
}

func newFakeCrawls(f *fakeCrawler) *crawls {
	return newCrawls(f.run, nil, slog.New(slog.DiscardHandler), time.Now)
}

// TestScheduleCrawlsAtStartThenEveryInterval: under fake time, the schedule
// crawls at once, then each next crawl starts interval ±10% after the
// previous one ended, and stop ends it without another crawl.
func TestScheduleCrawlsAtStartThenEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval, takes = 24 * time.Hour, time.Hour
		f := &fakeCrawler{takes: takes}
		c := newFakeCrawls(f)
		t0 := time.Now()
		c.schedule(interval)
		c.schedule(interval) // a second call starts no second loop
		synctest.Wait()
		if starts, _, running := f.snapshot(); len(starts) != 1 || !starts[0].Equal(t0) || running != 1 {
			t.Fatalf("at start: %d crawls (running %d), want one started at once", len(starts), running)
		}
		time.Sleep(10 * (interval + takes))
		synctest.Wait()
		starts, _, _ := f.snapshot()
		if len(starts) < 9 || len(starts) > 11 {
			t.Fatalf("%d crawls in ten intervals", len(starts))
		}
		for i := 1; i < len(starts); i++ {
			gap := starts[i].Sub(starts[i-1]) - takes
			if gap < interval*9/10 || gap > interval*11/10 {
				t.Errorf("crawl %d started %v after the previous one ended, want %v ±10%%", i, gap, interval)
			}
		}
		n := len(starts)
		c.stop()
		time.Sleep(3 * interval)
		synctest.Wait()
		if starts, _, running := f.snapshot(); len(starts) != n || running != 0 {
			t.Errorf("after stop: %d crawls (was %d), %d running", len(starts), n, running)
		}
	})
}

// TestOperatorCrawlAndSchedule: a crawl the operator starts is refused a
// second time while it runs (with its start time), a scheduled tick meeting
// it is skipped, and stop cancels it and waits for it.
func TestOperatorCrawlAndSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeCrawler{takes: 1000 * time.Hour}
		c := newFakeCrawls(f)
		t0 := time.Now().UTC().Truncate(time.Second)
		started, since := c.start()
		if !started || !since.Equal(t0) {
			t.Fatalf("first start: %v %v", started, since)
		}
		time.Sleep(time.Minute)
		if again, since2 := c.start(); again || !since2.Equal(t0) {
			t.Fatalf("second start while one runs: started %v, since %v; want false and %v", again, since2, t0)
		}
		c.schedule(time.Hour) // its first tick meets the running crawl
		time.Sleep(30 * time.Minute)
		synctest.Wait()
		if running, _ := c.status(); !running {
			t.Fatal("status says no crawl is running")
		}
		if starts, _, _ := f.snapshot(); len(starts) != 1 {
			t.Fatalf("%d crawls running at once", len(starts))
		}
		c.stop()
		_, ended, running := f.snapshot()
		if running != 0 || len(ended) != 1 || !errors.Is(ended[0], context.Canceled) {
			t.Fatalf("after stop: running %d, ended %v; want the crawl cancelled and waited for", running, ended)
		}
		if again, _ := c.start(); again {
			t.Error("a crawl started after stop")
		}
		if _, lastErr := c.status(); lastErr == nil || *lastErr != context.Canceled.Error() {
			t.Errorf("last crawl error %v", lastErr)
		}
	})
}

func TestJitterWithinTenPercent(t *testing.T) {
	seen := map[time.Duration]bool{}
	for range 200 {
		j := jitter(24 * time.Hour)
		if j < 24*time.Hour*9/10 || j > 24*time.Hour*11/10 {
			t.Fatalf("jitter gave %s", j)
		}
		seen[j] = true
	}
	if len(seen) < 100 {
		t.Errorf("only %d distinct intervals in 200 draws", len(seen))
	}
}
