package witness

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/internal/pebbledb"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
)

// Config is what a witness is made of. Dir, Name and Key are required.
type Config struct {
	// Dir is the witness's own Pebble database (a node uses <data dir>/witness), created if
	// missing. It holds, per log origin, the latest checkpoint cosigned and every size
	// cosigned before, and the equivocation bundles. Nothing else may open it.
	Dir string

	// Name is the witness's key name, as it appears in its cosignature lines and its
	// cosignature/v1 verifier key.
	Name string

	// Key is the witness's Ed25519 cosigning key. It must be a key for this purpose only
	// (keys.LabelWitnessCosigning), never the key the node's own log signs with.
	Key ed25519.PrivateKey

	// Logs are the logs witnessed at start, by origin; each verifier is the log's Ed25519
	// note verifier (note.NewVerifier of its vkey), and its key name must be the origin.
	// AddLog adds more while the witness runs.
	Logs map[string]note.Verifier

	// FS is the file system Dir is on; nil means the operating system's. Tests put a failing
	// disk here.
	FS vfs.FS

	// Clock gives the time of every cosignature; nil means time.Now.
	Clock func() time.Time

	// Logger receives the witness's logs; nil discards them.
	Logger *slog.Logger

	// Registerer receives the histor_witness_* series; nil registers none.
	Registerer prometheus.Registerer

	// OnEvidence, if set, is called once for each equivocation bundle this witness stores
	// from a submission, after it is on disk and outside every lock. It runs on the request's
	// goroutine, so it must hand the bundle on (to gossip, say) rather than block.
	OnEvidence func(Evidence)
}

var (
	// ErrClosed is returned by every call after Close.
	ErrClosed = errors.New("witness closed")
	// ErrStopped wraps every write after a failed one, until the witness is reopened.
	ErrStopped = errors.New("witness stopped after a failed write")
)

// Witness is an open witness. It is safe for concurrent use.
type Witness struct {
	name       string
	key        ed25519.PrivateKey
	vkey       string
	clock      func() time.Time
	logger     *slog.Logger
	metrics    *metrics
	onEvidence func(Evidence)

	logsMu sync.RWMutex
	logs   map[string]*witnessedLog // guarded by logsMu; entries are never removed
	byHash map[string]string        // hex SHA-256 of origin → origin, for the monitoring route; guarded by logsMu

	// dbMu is held shared around every store call and exclusively by Close, so no call
	// reaches a closed database.
	dbMu   sync.RWMutex
	db     kv
	closed bool // guarded by dbMu
	// stopped holds the first failed write's error. After it the witness writes nothing
	// more until it is reopened: the store cannot say how much of a failed batch reached the
	// disk, and a later synced write proves nothing about an earlier one that failed, so
	// cosigning on top could be undone by a crash.
	stopped atomic.Pointer[error]

	// evidenceMu makes "not held yet, so store it" one step, so a bundle two origins' turns
	// (or a submission and a peer) bring at once is stored and announced once.
	evidenceMu sync.Mutex
}

// witnessedLog is one log this witness cosigns for.
type witnessedLog struct {
	verifier note.Verifier
	// turn serialises submissions of this origin: holding its one slot is the right to read
	// the state, decide and write it. A channel, so a waiting request can give up with its
	// context.
	turn chan struct{}
}

// New opens the witness's store and returns the witness.
func New(c Config) (*Witness, error) {
	if c.Dir == "" {
		return nil, errors.New("opening witness: no directory")
	}
	if len(c.Key) != ed25519.PrivateKeySize {
		return nil, errors.New("opening witness: the cosigning key is not an Ed25519 private key")
	}
	vkey, err := keys.CosignatureVerifierKey(c.Name, c.Key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, fmt.Errorf("opening witness: %w", err)
	}
	w := &Witness{name: c.Name, key: c.Key, vkey: vkey, clock: c.Clock, logger: c.Logger,
		onEvidence: c.OnEvidence, logs: map[string]*witnessedLog{}, byHash: map[string]string{},
	}
	if w.clock == nil {
		w.clock = time.Now
	}
	if w.logger == nil {
		w.logger = slog.New(slog.DiscardHandler)
	}
	for _, origin := range slices.Sorted(maps.Keys(c.Logs)) {
		if err := w.addLog(origin, c.Logs[origin]); err != nil {
			return nil, fmt.Errorf("opening witness: %w", err)
		}
	}
	db, err := openPebble(c.Dir, c.FS, w.logger)
	if err != nil {
		return nil, fmt.Errorf("opening witness: %w", err)
	}
	if w.metrics, err = newMetrics(c.Registerer, w.Stopped); err != nil {
		db.close()
		return nil, fmt.Errorf("opening witness: %w", err)
	}
	w.db = db
	return w, nil
}

// Close closes the store; calls after it return ErrClosed.
func (w *Witness) Close() error {
	w.dbMu.Lock()
	defer w.dbMu.Unlock()
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	w.metrics.set.Unregister()
	if err := w.db.close(); err != nil {
		return fmt.Errorf("closing witness store: %w", err)
	}
	return nil
}

// Stopped is the failed write that stopped the witness's cosigning, nil while it cosigns.
// After one the witness answers every add-checkpoint that would cosign with an error (500)
// until it is reopened; reads go on.
func (w *Witness) Stopped() error {
	if first := w.stopped.Load(); first != nil {
		return *first
	}
	return nil
}

// VerifierKey is the witness's cosignature/v1 verifier key, which logs and auditors configure
// to check its cosignatures.
func (w *Witness) VerifierKey() string { return w.vkey }

// AddLog starts witnessing the log whose checkpoints v verifies; its origin is v.Name().
// Adding a log again with the same key does nothing; with another key it is refused, because
// cosigning under two keys for one origin would let either key fork what the other signed.
// State is kept across restarts whatever logs are configured, so a log added again later
// resumes from the size cosigned last.
func (w *Witness) AddLog(v note.Verifier) error {
	if err := w.addLog(v.Name(), v); err != nil {
		return fmt.Errorf("adding log: %w", err)
	}
	return nil
}

func (w *Witness) addLog(origin string, v note.Verifier) error {
	if v == nil || v.Name() != origin {
		return fmt.Errorf("log %q: the verifier's key name must be the origin", origin)
	}
	if _, err := format.ParseCheckpointText(origin + "\n0\n" + emptyRootB64 + "\n"); err != nil {
		return fmt.Errorf("log %q: not a checkpoint origin", origin)
	}
	w.logsMu.Lock()
	defer w.logsMu.Unlock()
	if have, ok := w.logs[origin]; ok {
		if have.verifier.KeyHash() != v.KeyHash() {
			return fmt.Errorf("log %q is witnessed under key %08x already", origin, have.verifier.KeyHash())
		}
		return nil
	}
	w.logs[origin] = &witnessedLog{verifier: v, turn: make(chan struct{}, 1)}
	sum := sha256.Sum256([]byte(origin))
	w.byHash[hex.EncodeToString(sum[:])] = origin
	return nil
}

const emptyRootB64 = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="

// Logs returns the origins witnessed, sorted.
func (w *Witness) Logs() []string {
	w.logsMu.RLock()
	defer w.logsMu.RUnlock()
	return slices.Sorted(maps.Keys(w.logs))
}

// originOf returns the origin whose hex SHA-256 is hash.
func (w *Witness) originOf(hash string) (string, bool) {
	w.logsMu.RLock()
	defer w.logsMu.RUnlock()
	origin, ok := w.byHash[hash]
	return origin, ok
}

func (w *Witness) log(origin string) *witnessedLog {
	w.logsMu.RLock()
	defer w.logsMu.RUnlock()
	return w.logs[origin]
}

// take waits for the origin's turn, or for ctx.
func (l *witnessedLog) take(ctx context.Context) (release func(), err error) {
	select {
	case l.turn <- struct{}{}:
		return func() { <-l.turn }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// State is the latest checkpoint a witness cosigned for one log.
type State struct {
	Origin string
	Size   uint64
	Root   [32]byte
	// Checkpoint is the cosigned checkpoint: its text, the log's signature lines the witness
	// verified, and the witness's cosignature.
	Checkpoint []byte
}

// Latest returns the latest checkpoint cosigned for origin; ok is false when there is none.
func (w *Witness) Latest(origin string) (s State, ok bool, err error) {
	st, ok, err := w.loadState(origin)
	if err != nil || !ok {
		return State{}, false, err
	}
	return State{Origin: origin, Size: st.size, Root: st.root, Checkpoint: st.cosigned}, true, nil
}

// Store calls, each under dbMu.

func (w *Witness) get(key []byte) ([]byte, bool, error) {
	w.dbMu.RLock()
	defer w.dbMu.RUnlock()
	if w.closed {
		return nil, false, ErrClosed
	}
	return w.db.get(key)
}

func (w *Witness) commit(pairs ...kvPair) error {
	w.dbMu.RLock()
	defer w.dbMu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	if first := w.stopped.Load(); first != nil {
		return fmt.Errorf("%w: %w", ErrStopped, *first)
	}
	if err := w.db.commit(pairs); err != nil {
		w.stopped.CompareAndSwap(nil, &err)
		return err
	}
	return nil
}

// scan calls fn with every acknowledged pair under prefix.
func (w *Witness) scan(prefix []byte, fn func(key, value []byte) error) error {
	w.dbMu.RLock()
	defer w.dbMu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	return w.db.scan(prefix, fn)
}

func (w *Witness) loadState(origin string) (stored, bool, error) {
	b, ok, err := w.get(stateKey(origin))
	if err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("reading witness state of %s: %w", origin, err)
		}
		return stored{}, false, err
	}
	st, err := decodeStored(b)
	if err != nil {
		return stored{}, false, fmt.Errorf("reading witness state of %s: %w", origin, err)
	}
	return st, true, nil
}

// PebbleMemory is what the witness's Pebble holds outside the Go heap when built with cgo: its
// block cache's bytes and its live WAL's (pebbledb.Acked.Memory); zero after Close.
func (w *Witness) PebbleMemory() pebbledb.Mem {
	w.dbMu.RLock()
	defer w.dbMu.RUnlock()
	if p, ok := w.db.(*pebbleKV); ok && !w.closed {
		return p.view.Memory()
	}
	return pebbledb.Mem{}
}
