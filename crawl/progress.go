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
// carriage returns). A nil *Progress shows nothing.
type Progress struct {
	w        io.Writer
	tty      bool
	interval time.Duration
	now      func() time.Time

	mu    sync.Mutex
	total int
	done  int
	ok    int
	began time.Time
	last  time.Time // last line written; guarded by mu
}

// NewProgress writes to w; tty selects the in-place bar. Plain lines come at
// most every interval (default 10s).
func NewProgress(w io.Writer, tty bool, interval time.Duration) *Progress {
	if interval <= 0 {
		interval = 10 * time.Second
	}
	return &Progress{w: w, tty: tty, interval: interval, now: time.Now}
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
	p.total, p.done, p.ok = total, 0, 0
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
	if now.Sub(p.last) >= gap || p.done == p.total {
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
	if p.tty {
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
