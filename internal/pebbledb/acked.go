package pebbledb

import (
	"errors"
	"fmt"
	"sync"

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
// A commit costs one snapshot; reads wait only for the switch between views.
type Acked struct {
	db    *pebble.DB
	guard *Guard

	commitMu sync.Mutex // one commit at a time; Close waits for it

	mu     sync.RWMutex // readers hold it for a read; guards view, kept and closed
	view   pebble.Reader
	kept   *pebble.Snapshot // the view after a commit that stopped the store
	closed bool
}

// NewAcked reads and commits db through g.
func NewAcked(db *pebble.DB, g *Guard) *Acked { return &Acked{db: db, guard: g, view: db} }

// Read calls fn with a reader of what the acknowledged commits wrote. fn must not keep the
// reader, an iterator or a value Get returned past its return, nor call Read or Commit.
func (a *Acked) Read(fn func(pebble.Reader) error) error {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		return ErrClosed
	}
	return fn(a.view)
}

// Commit commits b synced under the guard; readers see b once it is acknowledged, and
// never when it fails.
func (a *Acked) Commit(b *pebble.Batch) error {
	a.commitMu.Lock()
	defer a.commitMu.Unlock()
	if err := a.guard.Stopped(); err != nil {
		return &StoppedError{Cause: err}
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return ErrClosed
	}
	snap := a.db.NewSnapshot()
	a.view = snap
	a.mu.Unlock()
	err := a.guard.Apply(func() error { return b.Commit(pebble.Sync) })
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil && a.guard.Stopped() != nil {
		a.kept = snap // closed with the database, as Pebble may be unable to
		return err
	}
	a.view = a.db
	return errors.Join(err, snap.Close())
}

// Close closes the database once the commit and the reads under way are done; later reads
// and commits answer ErrClosed. After a fatal error it waits FatalCloseWait at most (see
// Guard.Close).
func (a *Acked) Close() error {
	a.commitMu.Lock()
	defer a.commitMu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	kept := a.kept
	return a.guard.closeAfter(a.db, func() error {
		if kept == nil {
			return nil
		}
		if err := kept.Close(); err != nil {
			return fmt.Errorf("closing the acknowledged view: %w", err)
		}
		return nil
	})
}
