package log

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/internal/pebbledb"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
)

// Config is everything Open needs.
type Config struct {
	// Dir is the Pebble directory; created if missing or empty.
	Dir string
	// FS holds Dir; nil is the operating system's. Tests put a faulty disk here.
	FS vfs.FS
	// Origin is the C2SP checkpoint origin and note key name, e.g.
	// "histor.example/log". It never changes for a log.
	Origin string
	// Key signs heads and checkpoints (and labels, elsewhere). It never
	// changes for a log: Open refuses a different one.
	Key ed25519.PrivateKey
	// DID is the did:key of Key, the STH "log" member.
	DID string
	// STHType is the type member of the log's JSON heads: "" is
	// format.STHType (the label log); the receipts log's is
	// format.ReceiptsSTHType. It never changes for a log.
	STHType string
	// Logger receives the log's messages; nil discards them.
	Logger *slog.Logger
	// CacheBytes is Pebble's block cache; 0 means 64 MiB.
	CacheBytes int64
	// MaxBatch is the most entries sequenced in one synced write; 0 means
	// 1024. A single Append larger than this is still one write.
	MaxBatch int
	// Now is the clock; nil means time.Now. Head timestamps never go
	// backwards even when it does.
	Now func() time.Time
	// Registerer receives the log's histor_log_* metrics; nil registers
	// none (never the global registry). Close unregisters them, so a log
	// reopened on the same registry registers again.
	Registerer prometheus.Registerer
	// OnHead, if set, is called with each new head once it is durable and
	// Latest returns it, in the order heads are signed, on the log's
	// publishing goroutine and outside every lock of the log. It must hand
	// the head on (to a channel, say) rather than block: the next batch's
	// callers wait for it.
	OnHead func(Head)

	memTableBytes uint64 // see storeOptions; tests only
}

func (c *Config) storeOptions() storeOptions {
	return storeOptions{fs: c.FS, cacheBytes: c.CacheBytes, memTableBytes: c.memTableBytes}
}

const (
	defaultCacheBytes = 64 << 20
	defaultMaxBatch   = 1024
	// MaxEntryBytes is the C2SP tlog-tiles bound on one entry.
	MaxEntryBytes = 65535
	// MaxAppend is the most entries one Append call may carry.
	MaxAppend = 1 << 16
	// pipelineDepth is how many applied batches may wait for their sync
	// while the sequencer builds the next.
	pipelineDepth = 2
	// MaxRange is the most entries one Entries call returns.
	MaxRange = 1 << 16
)

// Head is one signed tree head, in both its forms.
type Head struct {
	Size       uint64
	Root       [32]byte
	Time       time.Time // second precision, UTC
	STH        []byte    // the signed histor.sth/v1 document as served
	Checkpoint []byte    // the C2SP signed note
}

// Log is an open log. Its methods are safe for concurrent use.
type Log struct {
	cfg      Config
	store    kvStore
	logger   *slog.Logger
	metrics  *metrics // nil without a Registerer
	signer   note.Signer
	verifier note.Verifier

	reqs    chan *appendReq
	quit    chan struct{} // closed by Close
	stopped chan struct{} // closed when the sequencer has returned
	halted  chan struct{} // closed when a failure stopped the log (fail)
	once    sync.Once

	mu sync.RWMutex
	// latest is the newest durable head; guarded by mu; its size and seq
	// never decrease. Reads never go beyond it.
	latest headRecord
	// failed is set when a write or a sync failed; every later Append is
	// refused, because the store's state is then unknown (see apply).
	// Guarded by mu.
	failed error
	// pendingEv holds the keys of evidence applied to Pebble, which makes it
	// visible to reads, but whose batch is not yet known to be synced;
	// Evidence serves none of them. Guarded by mu.
	pendingEv map[string]struct{}

	// tip is the newest head applied to Pebble, possibly not yet synced;
	// tiles is the tree at tip and ids the filter of its label ids. All
	// three are owned by the sequencer goroutine once Open returns.
	tip    headRecord
	tiles  *tileState
	ids    *idFilter
	bundle []byte // the partial entry bundle at tip
}

// Open opens or creates the log in cfg.Dir, checks the stored state (see
// checkStored) and starts the sequencer. A new log signs a size-0 head.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("opening log: Dir is required")
	}
	l, err := newLog(cfg)
	if err != nil {
		return nil, err
	}
	if err := createIfMissing(l.cfg, l); err != nil {
		return nil, err
	}
	s, err := openPebble(l.cfg.Dir, l.cfg.storeOptions(), l.logger, false)
	if err != nil {
		return nil, err
	}
	return l.start(s)
}

// newLog checks cfg and makes the log's signer and verifier.
func newLog(cfg Config) (*Log, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	l := &Log{cfg: cfg, logger: cfg.Logger}
	var err error
	if l.verifier, err = format.NewVerifier(cfg.Origin, cfg.Key.Public().(ed25519.PublicKey)); err != nil {
		return nil, fmt.Errorf("opening log: %w", err)
	}
	if l.signer, err = keys.NoteSigner(cfg.Origin, cfg.Key); err != nil {
		return nil, fmt.Errorf("opening log: %w", err)
	}
	return l, nil
}

// start loads the log from s (creating it in an empty store), registers
// its metrics and starts the sequencer; on an error s is closed.
func (l *Log) start(s kvStore) (*Log, error) {
	l.store = s
	err := l.load()
	if err == nil {
		l.metrics, err = newMetrics(l.cfg.Registerer, l)
	}
	if err != nil {
		l.closeStore()
		return nil, err
	}
	l.reqs = make(chan *appendReq, l.cfg.MaxBatch)
	l.quit = make(chan struct{})
	l.stopped = make(chan struct{})
	l.halted = make(chan struct{})
	l.tip = l.latest
	staged := make(chan *pendingBatch, pipelineDepth)
	synced := make(chan struct{}, pipelineDepth+2)
	go l.sequence(staged, synced)
	go l.publish(staged, synced)
	if ps, ok := s.(*pebbleStore); ok {
		go l.watchBackground(ps.bg)
	}
	l.logger.Info("log open", "dir", l.cfg.Dir, "size", l.Size(), "origin", l.cfg.Origin)
	return l, nil
}

func (c *Config) validate() error {
	if c.Origin == "" || c.DID == "" {
		return fmt.Errorf("opening log: Origin and DID are required")
	}
	if len(c.Key) != ed25519.PrivateKeySize {
		return fmt.Errorf("opening log: Key is not an Ed25519 private key")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.STHType == "" {
		c.STHType = format.STHType
	}
	if c.CacheBytes <= 0 {
		c.CacheBytes = defaultCacheBytes
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = defaultMaxBatch
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.FS == nil {
		c.FS = vfs.Default
	}
	return nil
}

// Close stops the sequencer after its current batch and closes the store. After a
// failure stopped the log, it waits for the sequencer only so long: its batch may be held
// for good by a store that cannot go on.
func (l *Log) Close() error {
	var err error
	l.once.Do(func() {
		close(l.quit)
		select {
		case <-l.stopped:
		case <-l.halted:
			select {
			case <-l.stopped:
			case <-time.After(pebbledb.FatalCloseWait):
				err = fmt.Errorf("closing log: its last batch was not done %s after the log stopped (%w)", pebbledb.FatalCloseWait, l.failure())
			}
		}
		l.metrics.unregister()
		err = errors.Join(err, l.closeStore())
	})
	return err
}

func (l *Log) closeStore() error {
	if err := l.store.close(); err != nil {
		return fmt.Errorf("closing log store: %w", err)
	}
	return nil
}

// PebbleMemory is what the log's Pebble store holds outside the Go heap when built with cgo:
// its block cache's bytes and its live WAL's (what the memtables hold until flushed); zero
// for a store in memory, after close, or once a failure stopped it.
func (l *Log) PebbleMemory() pebbledb.Mem {
	if ps, ok := l.store.(*pebbleStore); ok {
		return ps.memory()
	}
	return pebbledb.Mem{}
}

// Latest returns the most recently signed head.
func (l *Log) Latest() Head {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.latest.Head
}

// Size returns the size of the latest head; every entry below it is durable.
func (l *Log) Size() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.latest.Size
}
