package crawl

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Progress shows a crawl's progress: a bar redrawn in place on a terminal,
// or a plain line every Interval otherwise (a log file must not fill with
// carriage returns). A nil *Progress shows nothing. Whatever it shows, it
// also counts for Crawler.Progress.
type Progress struct {
	w        io.Writer
	tty      bool
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	started bool // start was called since the last reset
	total   int
	done    int
	ok      int
	began   time.Time
	last    time.Time // last line written; guarded by mu
}

// NewProgress writes to w; tty selects the in-place bar. Plain lines come at
// most every interval (default 10s).
func NewProgress(w io.Writer, tty bool, interval time.Duration) *Progress {
	if interval <= 0 {
		interval = 10 * time.Second
	}
	return &Progress{w: w, tty: tty, interval: interval, now: time.Now}
}

// ProgressSnapshot is how far a crawl is: Done of Of targets committed.
type ProgressSnapshot struct {
	Done int
	Of   int
}

// newCounter is a Progress that only counts, for a crawler given none to
// draw.
func newCounter() *Progress { return &Progress{interval: time.Hour, now: time.Now} }

// snapshot is the counts since start; ok is false before start.
func (p *Progress) snapshot() (ProgressSnapshot, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return ProgressSnapshot{Done: p.done, Of: p.total}, p.started
}

// reset forgets the last crawl's counts.
func (p *Progress) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started, p.total, p.done, p.ok = false, 0, 0, 0
}

// IsTerminal reports whether f is a character device (a terminal), the
// test the standard library allows without a terminal package.
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (p *Progress) start(total int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started, p.total, p.done, p.ok = true, total, 0, 0
	p.began = p.now()
	p.last = p.began
}

func (p *Progress) step(status string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if status == "ok" {
		p.ok++
	}
	now := p.now()
	gap := p.interval
	if p.tty {
		gap = 100 * time.Millisecond
	}
	if p.w != nil && (now.Sub(p.last) >= gap || p.done == p.total) {
		p.last = now
		p.draw(now)
	}
}

func (p *Progress) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.w != nil {
		fmt.Fprintln(p.w)
	}
}

// draw writes the current state; called with mu held.
func (p *Progress) draw(now time.Time) {
	pct := 100
	if p.total > 0 {
		pct = p.done * 100 / p.total
	}
	elapsed := now.Sub(p.began).Round(time.Second)
	if !p.tty {
		fmt.Fprintf(p.w, "crawl: %d/%d targets (%d%%), %d ok, %s\n", p.done, p.total, pct, p.ok, elapsed)
		return
	}
	const width = 30
	bar := strings.Repeat("#", pct*width/100) + strings.Repeat(".", width-pct*width/100)
	fmt.Fprintf(p.w, "\r[%s] %3d%% %d/%d targets, %d ok, %s ", bar, pct, p.done, p.total, p.ok, elapsed)
}
