// Package schedule runs a node's crawls in the background: the schedule, counted from the
// newest crawl recorded, and those the operator starts, at most one at a time.
package schedule

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/state"
)

// Config is what the schedule runs and reads.
type Config struct {
	// Run is one crawl (the crawler's Run, and what follows a crawl); required.
	Run func(context.Context) (*crawl.Summary, error)
	// Progress is how far the running crawl is (the crawler's Progress); nil reports none.
	Progress func() (crawl.ProgressSnapshot, bool)
	// State, when set, holds the newest crawl recorded: the schedule counts from it, and
	// its error is Status's until this process finishes one, as HISTOR reads both back from
	// its runs table after a restart.
	State *state.Store
	// Logger hears failed crawls; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Crawls runs the crawls. At most one runs at a time. Every crawl runs under the part's own
// context, so Stop ends them all, whoever started them.
type Crawls struct {
	run      func(context.Context) (*crawl.Summary, error)
	progress func() (crawl.ProgressSnapshot, bool)
	logger   *slog.Logger
	now      func() time.Time

	ctx    context.Context // ends at stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	stopped   bool      // set by Stop; no crawl starts after it
	scheduled bool      // the schedule is running
	since     time.Time // start of the crawl running now; zero when none
	// lastErr is the error the newest finished crawl ended with: nil for
	// none (or no crawl recorded yet), "" never stored.
	lastErr *string
	last    lastRun // the newest finished crawl, for the schedule
}

// lastRun is what the schedule needs of the newest finished crawl.
type lastRun struct {
	started, ended time.Time // zero started: no crawl recorded
	failed         bool
}

// retryAfter bounds how long the schedule waits after a failed crawl, as
// HISTOR retries within the hour rather than lose a day of history.
const retryAfter = time.Hour

// New prepares the crawls; none runs until Start or Every.
func New(cfg Config) *Crawls {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Crawls{run: cfg.Run, progress: cfg.Progress, logger: cfg.Logger, now: cfg.Now, ctx: ctx, cancel: cancel}
	st, logger := cfg.State, cfg.Logger
	if st == nil {
		return c
	}
	runs, err := st.Runs(1)
	if err != nil {
		logger.Warn("reading the last crawl run", "err", err)
		return c
	}
	if len(runs) == 1 {
		r := runs[0]
		c.last = lastRun{started: r.Started, ended: r.Ended, failed: r.Error != ""}
		if r.Error != "" {
			c.lastErr = &r.Error
		}
	}
	return c
}

// Start begins a crawl in the background unless one is running; since is
// when the running crawl began (zero if the part is stopped).
func (c *Crawls) Start() (started bool, since time.Time) {
	since, err := c.begin()
	if err != nil {
		return false, since
	}
	go c.crawl()
	return true, since
}

// begin marks a crawl as running, unless the part is stopped (ErrStopped)
// or one already runs (crawl.ErrRunning); it reports the start time of the
// one running. The crawl joins the wait group here, under mu, so Stop never
// misses one.
func (c *Crawls) begin() (time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.stopped:
		return c.since, ErrStopped
	case !c.since.IsZero():
		return c.since, crawl.ErrRunning
	}
	c.wg.Add(1)
	c.since = c.now().UTC().Truncate(time.Second)
	return c.since, nil
}

// Run runs one crawl in the caller's goroutine, as Start does in the background: refused
// with crawl.ErrRunning while one runs and ErrStopped after Stop, and ended by Stop.
func (c *Crawls) Run() (*crawl.Summary, error) {
	if _, err := c.begin(); err != nil {
		return nil, err
	}
	return c.crawl()
}

// ErrStopped is a crawl asked for after Stop.
var ErrStopped = errors.New("crawls stopped")

// crawl runs one crawl that begin has admitted, and records how it ended.
func (c *Crawls) crawl() (*crawl.Summary, error) {
	defer c.wg.Done()
	sum, err := c.run(c.ctx)
	msg := ""
	if err != nil {
		msg = err.Error()
		if c.ctx.Err() == nil && !errors.Is(err, crawl.ErrRunning) {
			c.logger.Error("crawl failed", "err", err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !errors.Is(err, crawl.ErrRunning) { // a crawl this part did not start is not ours to count
		c.last = lastRun{started: c.since, ended: c.now(), failed: err != nil}
	}
	c.since, c.lastErr = time.Time{}, &msg
	return sum, err
}

// Every starts the crawl schedule, once. Like HISTOR's, it counts from
// the newest crawl, whoever started it and whether this process or an
// earlier one ran it: the next crawl starts interval (±10%) after the last
// one started, or, when that one failed, min(interval, 1h) (±10%) after it
// ended; at once when none is recorded or the time has passed. So a restart
// neither crawls again at once nor loses a day to one failed night. A tick
// that finds a crawl running (the operator's) skips it and looks again
// min(interval, 1h) later.
func (c *Crawls) Every(interval time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scheduled || c.stopped {
		return
	}
	c.scheduled = true
	c.wg.Go(func() { c.loop(interval) })
}

func (c *Crawls) loop(interval time.Duration) {
	wait := c.wait(interval)
	for {
		t := time.NewTimer(wait)
		select {
		case <-c.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		_, err := c.begin()
		switch {
		case err == nil:
			c.crawl()
			wait = c.wait(interval)
		case errors.Is(err, ErrStopped):
			return
		default:
			c.logger.Info("scheduled crawl skipped: a crawl is running")
			wait = jitter(min(interval, retryAfter))
		}
	}
}

// wait is how long the schedule waits from now for its next crawl, clamped
// to 0..the full wait (a last run dated in the future waits no longer).
func (c *Crawls) wait(interval time.Duration) time.Duration {
	c.mu.Lock()
	last := c.last
	c.mu.Unlock()
	if last.started.IsZero() {
		return 0
	}
	from, full := last.started, jitter(interval)
	if last.failed {
		from, full = last.ended, jitter(min(interval, retryAfter))
		if from.IsZero() {
			from = last.started
		}
	}
	return max(0, min(full, full-c.now().Sub(from)))
}

// Stop cancels the schedule and any crawl in progress and waits for them.
func (c *Crawls) Stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// Status is /health's view: whether a crawl is running and the error the
// newest one ended with (nil: none).
func (c *Crawls) Status() (running bool, lastErr *string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastErr != nil && *c.lastErr == "" {
		return !c.since.IsZero(), nil
	}
	return !c.since.IsZero(), c.lastErr
}

// Current is /api/v1/stats' view of the running crawl: when it began and,
// once it has read the registry, how far it is. ok is false when none runs.
func (c *Crawls) Current() (since time.Time, progress *crawl.ProgressSnapshot, ok bool) {
	c.mu.Lock()
	since = c.since
	c.mu.Unlock()
	if since.IsZero() {
		return time.Time{}, nil, false
	}
	if c.progress != nil {
		if p, ok := c.progress(); ok {
			progress = &p
		}
	}
	return since, progress, true
}

// jitter spreads d by ±10%, so a fleet of nodes restarted together does not
// crawl in lockstep.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.2-0.1)*float64(d))
}
