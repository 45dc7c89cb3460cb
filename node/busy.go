package node

import (
	"log/slog"
	"sync"
	"time"
)

// busyEvery is how often refusals beyond MaxInFlight are logged, at most.
const busyEvery = time.Minute

// busyLog records requests refused beyond MaxInFlight without letting a
// flood of them flood the log: the first refusal is logged at once, later
// ones as a count at most once every busyEvery.
type busyLog struct {
	mu      sync.Mutex
	last    time.Time
	pending int
}

func (b *busyLog) refused(logger *slog.Logger, limit int) {
	b.mu.Lock()
	b.pending++
	now := time.Now()
	if !b.last.IsZero() && now.Sub(b.last) < busyEvery {
		b.mu.Unlock()
		return
	}
	n := b.pending
	b.last, b.pending = now, 0
	b.mu.Unlock()
	logger.Warn("requests refused: busy", "refused", n, "max_in_flight", limit)
}
