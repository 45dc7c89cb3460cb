package log

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"
)

// backgroundEvery is how often a repeating background error is logged, at most.
const backgroundEvery = time.Minute

// background watches the work Pebble does on its own goroutines. The first flush or
// compaction that fails stops the log's appends: Pebble retries a failed flush at once and
// for ever (on a disk that died, a busy loop), and the memtables or level-0 tables it could
// not write pile up until Pebble stalls every write for good, so a caller waiting on one
// would hang; the WAL still holds every acknowledged entry, so the next Open has them. Every background error
// (flushes, compactions) is logged, the first at once and later ones as a count at most
// once every backgroundEvery, so a loop of them does not flood the log.
type background struct {
	logger *slog.Logger
	// flushFailed is closed at the first failed flush or compaction, after err is set.
	flushFailed chan struct{}
	once        sync.Once
	err         error

	mu       sync.Mutex
	last     time.Time // when an error was last logged
	unlogged int       // errors since
}

func newBackground(logger *slog.Logger) *background {
	return &background{logger: logger, flushFailed: make(chan struct{})}
}

// listener is the Pebble event listener reporting to b.
func (b *background) listener() *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: b.logError,
		FlushEnd: func(info pebble.FlushInfo) {
			// A flush of nothing ends with Pebble's unexported "empty table" error; it
			// wrote nothing and failed nothing.
			if info.Err != nil && info.Err.Error() != "pebble: empty table" {
				b.fail(info.Err)
			}
		},
		CompactionEnd: func(info pebble.CompactionInfo) {
			if info.Err != nil && !errors.Is(info.Err, pebble.ErrCancelledCompaction) {
				b.fail(info.Err)
			}
		},
	}
}

func (b *background) fail(err error) {
	b.once.Do(func() {
		b.err = err
		close(b.flushFailed)
	})
}

// failed is the first failed flush's or compaction's error, nil while none failed.
func (b *background) failed() error {
	select {
	case <-b.flushFailed:
		return b.err
	default:
		return nil
	}
}

func (b *background) logError(err error) {
	b.mu.Lock()
	b.unlogged++
	now := time.Now()
	if !b.last.IsZero() && now.Sub(b.last) < backgroundEvery {
		b.mu.Unlock()
		return
	}
	n := b.unlogged
	b.last, b.unlogged = now, 0
	b.mu.Unlock()
	b.logger.Error("pebble background error", "component", "pebble", "err", err, "errors", n)
}

// flushReplayed flushes the memtable Open replayed from the WAL, or returns the error of a
// flush that failed: Pebble's own Flush would wait for ever on a flush that never succeeds.
func flushReplayed(db *pebble.DB, b *background) error {
	done, err := db.AsyncFlush()
	if err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-b.flushFailed:
		return b.err
	}
}
