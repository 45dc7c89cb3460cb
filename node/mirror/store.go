package mirror

import (
	"crypto/ed25519"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/internal/pebbledb"
	"github.com/histor-observer/histor/internal/promset"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
)

// Bounds and defaults of Config.
const (
	DefaultMaxLeaves       = 50_000_000
	DefaultMaxBundleBytes  = 8 << 20
	DefaultMaxObservers    = 1024
	DefaultFetchers        = 4
	DefaultMaxEvidence     = 64 << 10
	DefaultBundlesPerBatch = 4
)

// Config is what Open needs.
type Config struct {
	// Dir is the store's Pebble directory, e.g. DataDir/mirror; empty keeps it in memory.
	Dir string
	// FS is the filesystem Dir is on; default the operating system's. Tests pass one that
	// loses unsynced writes or fails operations.
	FS vfs.FS
	// MaxLeaves bounds the tree of one observer the mirror keeps (default 50,000,000); a
	// checkpoint over it is refused with ErrBound.
	MaxLeaves uint64
	// MaxBundleBytes bounds one entry bundle a source serves (default 8 MiB: 256 labels of
	// up to 32 KiB); more is refused with ErrOversized.
	MaxBundleBytes int
	// MaxObservers bounds the observers followed (default 1,024).
	MaxObservers int
	// Fetchers is how many tiles, bundles or descriptors one Sync fetches at once (default 4).
	Fetchers int
	// BundlesPerBatch is how many entry bundles one committed batch holds (default 4).
	BundlesPerBatch int
	// OnObservation, when set, is told of each observation the index gains, after the batch
	// that holds it is durable, in leaf order per observer.
	OnObservation func(Observation)
	// Logger receives the store's logs; nil discards them.
	Logger *slog.Logger
	// Registerer, when set, gets the store's metrics.
	Registerer prometheus.Registerer
	// Now stamps syncs; default time.Now.
	Now func() time.Time
}

func (c *Config) applyDefaults() {
	if c.MaxLeaves == 0 {
		c.MaxLeaves = DefaultMaxLeaves
	}
	if c.MaxBundleBytes <= 0 {
		c.MaxBundleBytes = DefaultMaxBundleBytes
	}
	if c.MaxObservers <= 0 {
		c.MaxObservers = DefaultMaxObservers
	}
	if c.Fetchers <= 0 {
		c.Fetchers = DefaultFetchers
	}
	if c.BundlesPerBatch <= 0 {
		c.BundlesPerBatch = DefaultBundlesPerBatch
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Store is the mirrors of every followed observer's log. It is safe for concurrent use; one
// Sync of an observer runs at a time, while its mirror is served.
type Store struct {
	cfg       Config
	db        *pebble.DB
	guard     pebbledb.Guard // every synced write; stopped by the first fatal one or a failed flush
	metrics   *metrics
	metricSet *promset.Set
	close     sync.Once
	closed    atomic.Bool // set by Close, before Pebble closes

	mu   sync.RWMutex
	logs map[string]*mlog // by did:key; guarded by mu

	// unacked holds, for each index and evidence key a batch not acknowledged wrote, the
	// value it had before; readers take it over Pebble's (see read). Guarded by unackedMu.
	unackedMu sync.Mutex
	unacked   map[string]prior
}

// mlog is one observer's mirror. Its fields change only under sync (held by one Sync), and
// are read under mu.
type mlog struct {
	did string
	pub ed25519.PublicKey

	sync sync.Mutex // one Sync at a time

	mu       sync.RWMutex
	meta     meta
	verifier note.Verifier // nil until the origin is known
	status   Status
}

// meta is an observer's mirror state as stored, written in the batch of each step.
type meta struct {
	Origin string `json:"origin,omitempty"`
	// Target is the newest checkpoint verified and joined to every earlier one; the mirror
	// fills up to its size.
	Target []byte `json:"target,omitempty"`
	// Done is the newest checkpoint whose whole tree is held: what is served.
	Done []byte `json:"done,omitempty"`
	// Size is how many entries are held.
	Size uint64 `json:"size"`
	// Fork is the evidence bundle, once the observer's checkpoints forked.
	Fork []byte `json:"fork,omitempty"`

	target, done format.Checkpoint // parsed, not stored
}

// Status is what /api/v1/mirrors reports of one mirror.
type Status struct {
	Observer   string    `json:"observer"`
	Origin     string    `json:"origin,omitempty"`
	Size       uint64    `json:"size"`       // entries held
	Checkpoint uint64    `json:"checkpoint"` // size of the newest fully mirrored checkpoint
	Target     uint64    `json:"target"`     // size of the newest verified checkpoint
	Forked     bool      `json:"forked,omitempty"`
	LastSync   time.Time `json:"lastSync,omitzero"`
	LastSource string    `json:"lastSource,omitempty"`
	LastError  string    `json:"lastError,omitempty"`
}

// Keys. Every key of one observer starts with its kind and the did:key.
func metaKey(did string) []byte { return []byte("m/" + did) }
func entryKey(did string, i uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("e/"+did+"/"), i)
}
func hashKey(did string, i int64) []byte {
	return binary.BigEndian.AppendUint64([]byte("h/"+did+"/"), uint64(i))
}
func viewKey(did, server string) []byte { return []byte("v/" + did + "/" + server) }
func pendingKey(did string, leaf uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("p/"+did+"/"), leaf)
}
func evidenceKey(sri string) []byte { return []byte("x/" + sri) }

// Open opens (or creates) the store and loads the state of every observer it mirrors.
func Open(cfg Config) (*Store, error) {
	cfg.applyDefaults()
	opts := &pebble.Options{Logger: pebbledb.Quiet(cfg.Logger), FS: cfg.FS}
	dir := cfg.Dir
	if dir == "" {
		opts.FS, dir = vfs.NewMem(), "mirror"
	}
	s := &Store{cfg: cfg, logs: map[string]*mlog{}, unacked: map[string]prior{}}
	s.guard.Watch(opts, cfg.Logger)
	db, err := pebbledb.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("opening mirror store: %w", err)
	}
	s.db = db
	s.metrics = newMetrics(s.Stopped)
	if err := s.load(); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	if s.metricSet, err = promset.Register(cfg.Registerer, "mirror metrics", s.metrics.collectors()...); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return s, nil
}

// Close closes the store; Syncs still running fail.
func (s *Store) Close() error {
	var err error
	s.close.Do(func() {
		s.closed.Store(true)
		s.metricSet.Unregister()
		if err = s.guard.Close(s.db); err != nil {
			err = fmt.Errorf("closing mirror store: %w", err)
		}
	})
	return err
}

func (s *Store) load() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte("m/"), UpperBound: []byte("m0")})
	if err != nil {
		return fmt.Errorf("loading mirror store: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		did := string(it.Key()[2:])
		l, err := newLog(did)
		if err != nil {
			return fmt.Errorf("loading mirror of %s: %w", did, err)
		}
		var m meta
		if err := json.Unmarshal(it.Value(), &m); err != nil {
			return fmt.Errorf("loading mirror of %s: %w", did, err)
		}
		if err := l.setMeta(m); err != nil {
			return fmt.Errorf("loading mirror of %s: %w", did, err)
		}
		s.logs[did] = l
	}
	return it.Error()
}

func newLog(did string) (*mlog, error) {
	pub, err := awr.ParseDIDKey(did)
	if err != nil {
		return nil, err
	}
	return &mlog{did: did, pub: pub, status: Status{Observer: did}}, nil
}

// setMeta installs m, parsing its checkpoints (stored ones were verified when adopted).
func (l *mlog) setMeta(m meta) error {
	var v note.Verifier
	if m.Origin != "" {
		var err error
		if v, err = format.NewVerifier(m.Origin, l.pub); err != nil {
			return err
		}
	}
	for _, c := range []struct {
		raw []byte
		cp  *format.Checkpoint
	}{{m.Target, &m.target}, {m.Done, &m.done}} {
		if c.raw == nil {
			continue
		}
		cp, err := format.ParseCheckpoint(c.raw, v)
		if err != nil {
			return fmt.Errorf("stored checkpoint: %w", err)
		}
		*c.cp = cp
	}
	l.mu.Lock()
	l.meta, l.verifier = m, v
	l.status.Origin, l.status.Size, l.status.Checkpoint, l.status.Target = m.Origin, m.Size, m.done.Size, m.target.Size
	l.status.Forked = m.Fork != nil
	l.mu.Unlock()
	return nil
}

func (l *mlog) snapshot() meta {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.meta
}

// Follow makes the store mirror did's log; origin, when known (from the observer's
// descriptor), pins the checkpoint origin, else the first verified checkpoint pins it.
// Following an observer again changes nothing, but a known origin that differs from the
// pinned one is an error.
func (s *Store) Follow(did, origin string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.logs[did]; l != nil {
		if m := l.snapshot(); origin != "" && m.Origin != "" && m.Origin != origin {
			return fmt.Errorf("following %s: origin %q, but its mirror holds %q", did, origin, m.Origin)
		}
		return nil
	}
	if len(s.logs) >= s.cfg.MaxObservers {
		return fmt.Errorf("following %s: %w: %d observers", did, ErrBound, s.cfg.MaxObservers)
	}
	l, err := newLog(did)
	if err != nil {
		return fmt.Errorf("following %s: %w", did, err)
	}
	if origin != "" {
		if err := l.setMeta(meta{Origin: origin}); err != nil {
			return fmt.Errorf("following %s: %w", did, err)
		}
	}
	s.logs[did] = l
	return nil
}

func (s *Store) log(did string) *mlog {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.logs[did]
}

// Observers lists the followed observers, sorted.
func (s *Store) Observers() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.logs))
	for did := range s.logs {
		out = append(out, did)
	}
	slices.Sort(out)
	return out
}

// Statuses reports every mirror, sorted by observer.
func (s *Store) Statuses() []Status {
	var out []Status
	for _, did := range s.Observers() {
		if l := s.log(did); l != nil {
			l.mu.RLock()
			out = append(out, l.status)
			l.mu.RUnlock()
		}
	}
	return out
}

// Size is how many entries of did's log the mirror holds, 0 for an observer not followed.
func (s *Store) Size(did string) uint64 {
	if l := s.log(did); l != nil {
		return l.snapshot().Size
	}
	return 0
}

// Stopped is the failed write that stopped the mirror store's writes (Pebble's commit pipeline
// cannot go on after one), nil while it takes them. Reads go on, showing what was
// acknowledged; reopening clears it.
func (s *Store) Stopped() error { return s.guard.Stopped() }

// PebbleMemory is what the mirror's Pebble holds outside the Go heap when built with cgo: its
// block cache's bytes and its live WAL's; zero once closed or stopped (after a failure
// Pebble's mutex may be held for good, and its Metrics would wait on it for ever).
func (s *Store) PebbleMemory() pebbledb.Mem {
	if s.closed.Load() || s.guard.Stopped() != nil {
		return pebbledb.Mem{}
	}
	return pebbledb.Memory(s.db)
}
