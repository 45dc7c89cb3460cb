package pebbledb

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble"
)

// ErrClosed is a read or a commit after Acked.Close.
var ErrClosed = errors.New("store closed")

// Acked commits synced batches one at a time and lets readers see only what a commit
// acknowledged. Pebble shows a batch to reads once it is in the memtable, before its WAL
// sync returns, and goes on showing it when the sync fails: a reader would see a write that
// a crash then loses, and after a failure one nobody was told of. While a commit is in
// flight readers read a snapshot taken before it; when it fails they read that snapshot for
// good (the store stopped: Guard), so a stopped store serves exactly what it acknowledged.
//
// A commit costs one snapshot, and waits before it applies for the reads of the database
// under way (a read that began before it may read again after); reads that begin meanwhile
// wait with it, and those during its sync read the snapshot and wait for nothing.
type Acked struct {
	db    *pebble.DB
	guard *Guard

	commitMu sync.Mutex // one commit at a time; Close waits for it

	// mu is held shared by each read of the database, for the whole read, and by a
	// commit or Close to change snap or closed.
	mu      sync.RWMutex
	snap    *snapshot // nil: reads read the database
	closed  bool
	reading sync.WaitGroup // the reads of a snapshot under way (they hold no lock)
}

// snapshot is the database before a commit, read while the commit is in flight or after it
// failed.
type snapshot struct {
	snap *pebble.Snapshot
	refs atomic.Int32 // its readers, and one while it is Acked's
}

// release drops one reference to s, closing it with the last.
func (s *snapshot) release() error {
	if s.refs.Add(-1) > 0 {
		return nil
	}
	return s.snap.Close()
}

// NewAcked reads and commits db through g.
func NewAcked(db *pebble.DB, g *Guard) *Acked { return &Acked{db: db, guard: g} }

// Read calls fn with a reader of what the acknowledged commits wrote. fn must not keep the
// reader, an iterator or a value Get returned past its return, nor call Read or Commit.
func (a *Acked) Read(fn func(pebble.Reader) error) error {
	a.mu.RLock()
	if a.closed {
		a.mu.RUnlock()
		return ErrClosed
	}
	s := a.snap
	if s == nil {
		defer a.mu.RUnlock()
		return fn(a.db)
	}
	s.refs.Add(1)
	a.reading.Add(1)
	a.mu.RUnlock()
	defer a.reading.Done()
	err := fn(s.snap)
	return errors.Join(err, s.release())
}

// Commit commits b synced under the guard; readers see b once it is acknowledged, and
// never when it fails.
func (a *Acked) Commit(b *pebble.Batch) error {
	a.commitMu.Lock()
	defer a.commitMu.Unlock()
	if err := a.guard.Stopped(); err != nil {
		return &StoppedError{Cause: err}
	}
	a.mu.Lock() // waits for the reads of the database under way
	if a.closed {
		a.mu.Unlock()
		return ErrClosed
	}
	before := &snapshot{snap: a.db.NewSnapshot()}
	before.refs.Store(1)
	a.snap = before
	a.mu.Unlock()
	err := a.guard.Apply(func() error { return b.Commit(pebble.Sync) })
	if err != nil && a.guard.Stopped() != nil {
		return err // before stays the view for good, closed with the database
	}
	a.mu.Lock()
	a.snap = nil
	a.mu.Unlock()
	return errors.Join(err, before.release())
}

// Mem is what Pebble holds of a database in memory, outside the Go heap when built with cgo
// (it allocates with C's allocator).
type Mem struct {
	Cache int64 // the bytes in its block cache
	// Unflushed is the live WAL's bytes: the writes its memtables hold until flushed.
	Unflushed int64
	// Memtables is the memtable arenas allocated, a flushed one Pebble keeps (a zombie, or
	// for reuse) among them: a full arena stays resident after its flush, which Unflushed
	// no longer shows.
	Memtables int64
}

// Memory is Mem of the database; zero once closed or stopped: after a failure Pebble's
// mutex may be held for good, and its Metrics would wait on it for ever.
func (a *Acked) Memory() Mem {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed || a.guard.Stopped() != nil {
		return Mem{}
	}
	return Memory(a.db)
}

// Memory is Mem of a database the caller knows open and not stopped.
func Memory(db *pebble.DB) Mem {
	m := db.Metrics()
	return Mem{Cache: m.BlockCache.Size, Unflushed: int64(m.WAL.Size), Memtables: int64(m.MemTable.Size + m.MemTable.ZombieSize)}
}

// Write commits, as Commit, the batch fill makes.
func (a *Acked) Write(fill func(*pebble.Batch) error) error {
	b := a.db.NewBatch()
	defer b.Close()
	if err := fill(b); err != nil {
		return err
	}
	return a.Commit(b)
}

// Close closes the database once the commit and the reads under way are done; later reads
// and commits answer ErrClosed. After a fatal error it waits FatalCloseWait at most (see
// Guard.Close).
func (a *Acked) Close() error {
	a.commitMu.Lock()
	defer a.commitMu.Unlock()
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	last := a.snap
	a.mu.Unlock()
	a.reading.Wait()
	return a.guard.closeAfter(a.db, func() error {
		if last == nil {
			return nil
		}
		if err := last.release(); err != nil {
			return fmt.Errorf("closing the acknowledged view: %w", err)
		}
		return nil
	})
}
