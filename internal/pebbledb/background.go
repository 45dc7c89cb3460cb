package pebbledb

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"
)

// backgroundEvery is how often a repeating background error is logged, at most.
const backgroundEvery = time.Minute

// Background watches the work Pebble does on its own goroutines, flushes and compactions,
// and reports the first that fails. Pebble retries a failed flush at once and for ever (on
// a disk that died, a busy loop), and the memtables or level-0 tables it could not write
// pile up until it stalls every write for good, so a store must stop taking writes at the
// first; the WAL still holds every acknowledged write, so the next Open has them. Without
// a listener Pebble gives its background errors to Logger.Infof, which a Quiet logger drops.
//
// Every background error is logged, the first at once and later ones as a count at most once
// every backgroundEvery, so a loop of them does not flood the log.
type Background struct {
	logger *slog.Logger
	onFail func(error) // called once, with the first failure, before failed is closed

	failed chan struct{} // closed at the first failed flush or compaction, after err is set
	once   sync.Once
	err    error

	mu       sync.Mutex
	last     time.Time // when an error was last logged
	unlogged int       // errors since
}

// BackgroundError is a flush or a compaction of Pebble's that failed.
type BackgroundError struct {
	Op  string // "flush" or "compaction"
	Err error
}

func (e *BackgroundError) Error() string { return "pebble " + e.Op + " failed: " + e.Err.Error() }
func (e *BackgroundError) Unwrap() error { return e.Err }

// NewBackground is a Background logging to logger (nil: slog's default).
func NewBackground(logger *slog.Logger) *Background {
	if logger == nil {
		logger = slog.Default()
	}
	return &Background{logger: logger, failed: make(chan struct{})}
}

// Listener is the Pebble event listener reporting to b: set it as the Options' EventListener.
func (b *Background) Listener() *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: b.logError,
		FlushEnd: func(info pebble.FlushInfo) {
			// A flush of nothing ends with Pebble's unexported "empty table" error; it
			// wrote nothing and failed nothing.
			if info.Err != nil && info.Err.Error() != "pebble: empty table" {
				b.fail(&BackgroundError{Op: "flush", Err: info.Err})
			}
		},
		CompactionEnd: func(info pebble.CompactionInfo) {
			if info.Err != nil && !errors.Is(info.Err, pebble.ErrCancelledCompaction) {
				b.fail(&BackgroundError{Op: "compaction", Err: info.Err})
			}
		},
	}
}

func (b *Background) fail(err *BackgroundError) {
	b.once.Do(func() {
		// Logged here, before the failure shows: Pebble reports it to BackgroundError only
		// after FlushEnd or CompactionEnd. Its report within backgroundEvery is counted.
		b.mu.Lock()
		b.last = time.Now()
		b.mu.Unlock()
		b.logger.Error("pebble background error: the store takes no more writes until it is reopened",
			"component", "pebble", "op", err.Op, "err", err.Err)
		b.err = err
		if b.onFail != nil {
			b.onFail(err)
		}
		close(b.failed)
	})
}

// Failed is closed at the first failed flush or compaction.
func (b *Background) Failed() <-chan struct{} { return b.failed }

// Err is the first failed flush's or compaction's *BackgroundError, nil while none failed.
func (b *Background) Err() error {
	select {
	case <-b.failed:
		return b.err
	default:
		return nil
	}
}

func (b *Background) logError(err error) {
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

// Watch has g stop, as at a fatal commit error, at the first flush or compaction of the
// database opened with opts that fails, and logs every background error to logger (nil:
// slog's default) as Background does. Call it before opening, once.
//
// Every write that comes after the failure is refused at once. One already in Pebble's
// commit pipeline finishes (its WAL sync goes on), unless it needs a new memtable while
// the failed one waits: then Pebble stalls it until the store is reopened. The caller owns
// the batch, so Apply cannot leave it behind. The failed flush began as its memtable was
// set aside for a new one, so only a write of about a memtable's size (4 MiB unless the store
// sets less) that entered just before the failure meets this.
func (g *Guard) Watch(opts *pebble.Options, logger *slog.Logger) {
	b := NewBackground(logger)
	b.onFail = func(err error) { g.first.CompareAndSwap(nil, &err) }
	l := b.Listener()
	if opts.EventListener != nil {
		t := pebble.TeeEventListener(*opts.EventListener, *l)
		l = &t
	}
	opts.EventListener = l
}
