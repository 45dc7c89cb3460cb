package schedule

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/state"
)

// fakeCrawler records when each crawl started and lets the test decide how
// long one takes.
type fakeCrawler struct {
	mu      sync.Mutex
	starts  []time.Time
	takes   time.Duration // how long a crawl runs, in bubble time
	failing int           // how many crawls, the first ones, fail
	fail    error         // what each of them ends with
	ended   []error       // how each crawl ended
	running int
}

func (f *fakeCrawler) run(ctx context.Context) (*crawl.Summary, error) {
	f.mu.Lock()
	f.starts = append(f.starts, time.Now())
	f.running++
	fails := len(f.starts) <= f.failing
	f.mu.Unlock()
	var err error
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(f.takes):
		if fails {
			err = f.fail
		}
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

func newFakeCrawls(f *fakeCrawler) *Crawls {
	return New(Config{Run: f.run})
}

// TestScheduleCrawlsAtStartThenEveryInterval: under fake time, the schedule
// of a node with no crawl recorded crawls at once, then each next crawl
// starts interval ±10% after the previous one started, and stop ends it
// without another crawl.
func TestScheduleCrawlsAtStartThenEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval, takes = 24 * time.Hour, time.Hour
		f := &fakeCrawler{takes: takes}
		c := newFakeCrawls(f)
		t0 := time.Now()
		c.Every(interval)
		c.Every(interval) // a second call starts no second loop
		synctest.Wait()
		if starts, _, running := f.snapshot(); len(starts) != 1 || !starts[0].Equal(t0) || running != 1 {
			t.Fatalf("at start: %d crawls (running %d), want one started at once", len(starts), running)
		}
		time.Sleep(10*interval + takes)
		synctest.Wait()
		starts, _, _ := f.snapshot()
		if len(starts) < 9 || len(starts) > 11 {
			t.Fatalf("%d crawls in ten intervals", len(starts))
		}
		for i := 1; i < len(starts); i++ {
			// The schedule counts from the start kept to the second (as
			// HISTOR records it), so a gap can be up to a second shorter.
			gap := starts[i].Sub(starts[i-1])
			if gap < interval*9/10-time.Second || gap > interval*11/10 {
				t.Errorf("crawl %d started %v after the previous one started, want %v ±10%%", i, gap, interval)
			}
		}
		n := len(starts)
		c.Stop()
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
		started, since := c.Start()
		if !started || !since.Equal(t0) {
			t.Fatalf("first start: %v %v", started, since)
		}
		time.Sleep(time.Minute)
		if again, since2 := c.Start(); again || !since2.Equal(t0) {
			t.Fatalf("second start while one runs: started %v, since %v; want false and %v", again, since2, t0)
		}
		c.Every(time.Hour) // its first tick meets the running crawl
		time.Sleep(30 * time.Minute)
		synctest.Wait()
		if running, _ := c.Status(); !running {
			t.Fatal("status says no crawl is running")
		}
		if starts, _, _ := f.snapshot(); len(starts) != 1 {
			t.Fatalf("%d crawls running at once", len(starts))
		}
		c.Stop()
		_, ended, running := f.snapshot()
		if running != 0 || len(ended) != 1 || !errors.Is(ended[0], context.Canceled) {
			t.Fatalf("after stop: running %d, ended %v; want the crawl cancelled and waited for", running, ended)
		}
		if again, _ := c.Start(); again {
			t.Error("a crawl started after stop")
		}
		if _, lastErr := c.Status(); lastErr == nil || *lastErr != context.Canceled.Error() {
			t.Errorf("last crawl error %v", lastErr)
		}
	})
}

// bubbleStart is when a synctest bubble's clock starts.
var bubbleStart = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// TestScheduleCountsFromTheLastRun: the first scheduled crawl comes interval
// (±10%) after the newest recorded run started, or min(interval, 1h) (±10%)
// after it ended when it failed, at once when that time has passed or no
// run is recorded, and never later than a full wait.
func TestScheduleCountsFromTheLastRun(t *testing.T) {
	const day = 24 * time.Hour
	ago := func(d time.Duration) time.Time { return bubbleStart.Add(-d) }
	cases := []struct {
		name     string
		interval time.Duration
		last     *state.Run
		want     time.Duration // the first crawl's delay before jitter
		spread   time.Duration // the jitter it may carry: 10% of the full wait
	}{
		{"no run recorded", day, nil, 0, 0},
		{"ok 20h ago", day, &state.Run{Started: ago(20 * time.Hour), Ended: ago(19 * time.Hour)}, 4 * time.Hour, day / 10},
		{"ok 30h ago", day, &state.Run{Started: ago(30 * time.Hour), Ended: ago(29 * time.Hour)}, 0, 0},
		{"ok, dated in the future", day, &state.Run{Started: bubbleStart.Add(5 * day), Ended: bubbleStart.Add(5 * day)}, day, day / 10},
		{"failed, ended 20m ago", day, &state.Run{Started: ago(3 * time.Hour), Ended: ago(20 * time.Minute), Error: "harvesting registry: HTTP 503"}, 40 * time.Minute, 6 * time.Minute},
		{"failed, ended 2h ago", day, &state.Run{Started: ago(3 * time.Hour), Ended: ago(2 * time.Hour), Error: "x"}, 0, 0},
		{"failed, short interval", 30 * time.Minute, &state.Run{Started: ago(20 * time.Minute), Ended: ago(10 * time.Minute), Error: "x"}, 20 * time.Minute, 3 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := state.Open(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if tc.last != nil {
				older := state.Run{Started: tc.last.Started.Add(-2 * day), Ended: tc.last.Started.Add(-2 * day)}
				for _, r := range []state.Run{older, *tc.last} {
					if err := st.AddRun(r); err != nil {
						t.Fatal(err)
					}
				}
			}
			synctest.Test(t, func(t *testing.T) {
				if !time.Now().Equal(bubbleStart) {
					t.Fatalf("the bubble starts at %v", time.Now())
				}
				f := &fakeCrawler{takes: time.Minute}
				c := New(Config{Run: f.run, State: st})
				defer c.Stop()
				c.Every(tc.interval)
				time.Sleep(tc.want + tc.spread + time.Second)
				synctest.Wait()
				starts, _, _ := f.snapshot()
				if len(starts) == 0 {
					t.Fatalf("no crawl within %v", tc.want+tc.spread)
				}
				if got := starts[0].Sub(bubbleStart); got < tc.want-tc.spread || got > tc.want+tc.spread {
					t.Errorf("first crawl after %v, want %v ±%v", got, tc.want, tc.spread)
				}
			})
		})
	}
}

// TestScheduleRetriesAFailedCrawl: a crawl that fails is retried
// min(interval, 1h) (±10%) after it ended, not a whole interval later; once
// one succeeds, the schedule waits the interval (±10%) from its start again.
func TestScheduleRetriesAFailedCrawl(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval, takes, failing = 24 * time.Hour, 10 * time.Minute, 3
		f := &fakeCrawler{takes: takes, failing: failing, fail: errors.New("harvesting registry: HTTP 503")}
		c := New(Config{Run: f.run})
		c.Every(interval)
		time.Sleep(3 * interval)
		synctest.Wait()
		c.Stop()
		starts, ended, _ := f.snapshot()
		if len(starts) < failing+3 {
			t.Fatalf("%d crawls in three days, want %d failed ones retried and then one a day", len(starts), failing)
		}
		for i := 1; i < len(starts); i++ {
			gap, want := starts[i].Sub(starts[i-1]), interval
			if ended[i-1] != nil {
				gap, want = gap-takes, retryAfter
			}
			if gap < want*9/10 || gap > want*11/10 {
				t.Errorf("crawl %d came %v after crawl %d (which ended %v), want %v ±10%%", i, gap, i-1, ended[i-1], want)
			}
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
