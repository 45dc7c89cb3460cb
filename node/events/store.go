package events

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/histor-observer/histor/internal/pebbledb"
)

// ErrNotFound is returned by Meta when a key holds nothing.
var ErrNotFound = errors.New("events: not found")

// Bounds of a page.
const (
	DefaultLimit = 100 // HISTOR's
	MaxLimit     = 200 // HISTOR's
	MaxWatch     = 100 // targets one page may watch
)

// Key layout. Cursors are big-endian so key order is cursor order.
const (
	prefixEvent  = "e/" // e/<cursor>: the signed event's bytes
	prefixID     = "i/" // i/<event id>: its cursor
	prefixTarget = "t/" // t/<target>/<cursor>: nothing; pages one target's events
	prefixMeta   = "m/" // m/<name>: a caller's JSON record (Meta)
	keyLast      = "n/last"
)

// Item is one event with its cursor.
type Item struct {
	Cursor uint64          `json:"cursor"`
	Event  json.RawMessage `json:"event"`
}

// Store is an open event database. It is safe for concurrent use.
type Store struct {
	db    *pebble.DB
	guard pebbledb.Guard // every synced write; stopped by the first fatal one or a failed flush
	// view is every read and every commit: reads show only what a commit acknowledged
	// (Pebble's own show a batch in flight, and one whose sync failed, whose cursor a
	// restart would give to another event).
	view *pebbledb.Acked
	mu   sync.Mutex // serialises Append, so cursors are assigned without gaps or repeats
	// last is the newest cursor assigned; guarded by mu, also read under it.
	last uint64
	// appended is closed and replaced on every fresh Append; guarded by mu.
	appended chan struct{}
}

// Open opens (or creates) the event database in dir; logger (nil: none) hears why it stopped.
func Open(dir string, logger *slog.Logger) (*Store, error) { return OpenFS(nil, dir, logger) }

// OpenFS is Open with dir on fsys; nil means the operating system's filesystem. Tests pass
// one that fails.
func OpenFS(fsys vfs.FS, dir string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{appended: make(chan struct{})}
	opts := &pebble.Options{Logger: pebbledb.Quiet(logger), FS: fsys}
	s.guard.Watch(opts, logger)
	db, err := pebbledb.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("opening events %s: %w", dir, err)
	}
	s.db = db
	s.view = pebbledb.NewAcked(db, &s.guard)
	v, closer, err := db.Get([]byte(keyLast))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		db.Close()
		return nil, fmt.Errorf("reading the last event cursor: %w", err)
	default:
		s.last = binary.BigEndian.Uint64(v)
		closer.Close()
	}
	return s, nil
}

// Close closes the database once the commit and reads under way are done; later calls
// answer pebbledb.ErrClosed.
func (s *Store) Close() error {
	if err := s.view.Close(); err != nil {
		return fmt.Errorf("closing events: %w", err)
	}
	return nil
}

func cursorKey(prefix string, c uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(prefix), c)
}

// Append records a signed event (Signer.Sign's bytes and id) about target
// and returns its cursor. An event already recorded keeps its cursor and
// fresh is false. The event is durable when Append returns.
func (s *Store) Append(doc []byte, id, target string) (cursor uint64, fresh bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A stopped store refuses every append, the same event again too: the store's
	// acknowledged view says nothing of what a reopen will hold if a commit is in doubt.
	if err := s.guard.Stopped(); err != nil {
		return 0, false, fmt.Errorf("appending event: %w", &pebbledb.StoppedError{Cause: err})
	}
	v, err := s.get([]byte(prefixID + id))
	if err == nil {
		return binary.BigEndian.Uint64(v), false, nil
	}
	if !errors.Is(err, pebble.ErrNotFound) {
		return 0, false, fmt.Errorf("looking up event %s: %w", id, err)
	}
	c := s.last + 1
	b := s.db.NewBatch()
	defer b.Close()
	cb := binary.BigEndian.AppendUint64(nil, c)
	b.Set(cursorKey(prefixEvent, c), doc, nil)
	b.Set([]byte(prefixID+id), cb, nil)
	b.Set(cursorKey(prefixTarget+target+"/", c), nil, nil)
	b.Set([]byte(keyLast), cb, nil)
	if err := s.view.Commit(b); err != nil {
		return 0, false, fmt.Errorf("appending event: %w", err)
	}
	s.last = c
	close(s.appended)
	s.appended = make(chan struct{})
	return c, true, nil
}

// Last is the newest cursor, 0 before the first event.
func (s *Store) Last() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Appended is closed at the next fresh Append, for a waiter that wants to
// hear of new events without polling.
func (s *Store) Appended() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appended
}

// Page returns up to limit events with a cursor above after, oldest first;
// with watch, only events about those targets.
func (s *Store) Page(after uint64, limit int, watch []string) ([]Item, error) {
	limit = min(max(limit, 1), MaxLimit)
	if len(watch) == 0 {
		return s.scan(prefixEvent, after, limit, func(c uint64) uint64 { return c })
	}
	var cursors []uint64
	for _, t := range watch {
		cs, err := s.targetCursors(t, after, limit)
		if err != nil {
			return nil, err
		}
		cursors = append(cursors, cs...)
	}
	slices.Sort(cursors)
	cursors = slices.Compact(cursors)
	out := make([]Item, 0, min(limit, len(cursors)))
	for _, c := range cursors[:min(limit, len(cursors))] {
		doc, err := s.get(cursorKey(prefixEvent, c))
		if err != nil {
			return nil, fmt.Errorf("reading event %d: %w", c, err)
		}
		out = append(out, Item{Cursor: c, Event: doc})
	}
	return out, nil
}

// Newest returns up to limit events, newest first; with watch, only those
// about its targets.
func (s *Store) Newest(limit int, watch []string) ([]Item, error) {
	limit = min(max(limit, 1), MaxLimit)
	var out []Item
	err := s.view.Read(func(r pebble.Reader) error {
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixEvent), UpperBound: []byte(afterPrefix(prefixEvent))})
		if err != nil {
			return fmt.Errorf("listing events: %w", err)
		}
		defer it.Close()
		for ok := it.Last(); ok && len(out) < limit; ok = it.Prev() {
			c := binary.BigEndian.Uint64(it.Key()[len(prefixEvent):])
			if len(watch) > 0 && !about(r, c, watch) {
				continue
			}
			out = append(out, Item{Cursor: c, Event: slices.Clone(it.Value())})
		}
		return it.Error()
	})
	return out, err
}

// about reports whether event c is about one of targets.
func about(r pebble.Reader, c uint64, targets []string) bool {
	for _, t := range targets {
		if _, closer, err := r.Get(cursorKey(prefixTarget+t+"/", c)); err == nil {
			closer.Close()
			return true
		}
	}
	return false
}

// afterPrefix is the least key after every key that starts with prefix.
func afterPrefix(prefix string) string {
	return prefix[:len(prefix)-1] + string(prefix[len(prefix)-1]+1)
}

func (s *Store) targetCursors(target string, after uint64, limit int) ([]uint64, error) {
	var out []uint64
	_, err := s.scan(prefixTarget+target+"/", after, limit, func(c uint64) uint64 {
		out = append(out, c)
		return 0
	})
	return out, err
}

// scan walks the cursor keys under prefix above after, at most limit; with
// a non-zero answer from each it collects the event bytes of that cursor.
func (s *Store) scan(prefix string, after uint64, limit int, each func(c uint64) uint64) ([]Item, error) {
	out := []Item{}
	err := s.view.Read(func(r pebble.Reader) error {
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: cursorKey(prefix, after+1), UpperBound: []byte(afterPrefix(prefix))})
		if err != nil {
			return fmt.Errorf("listing events: %w", err)
		}
		defer it.Close()
		for ok := it.First(); ok && limit > 0; ok = it.Next() {
			limit--
			if c := each(binary.BigEndian.Uint64(it.Key()[len(prefix):])); c != 0 {
				out = append(out, Item{Cursor: c, Event: slices.Clone(it.Value())})
			}
		}
		if err := it.Error(); err != nil {
			return fmt.Errorf("listing events: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) get(key []byte) ([]byte, error) {
	var out []byte
	err := s.view.Read(func(r pebble.Reader) error {
		v, closer, err := r.Get(key)
		if err != nil {
			return err
		}
		defer closer.Close()
		out = slices.Clone(v)
		return nil
	})
	return out, err
}

// Meta reads the JSON record a caller keeps under name (the event
// derivation's cursors, webhook deliveries) into v; ErrNotFound when none.
func (s *Store) Meta(name string, v any) error {
	b, err := s.get([]byte(prefixMeta + name))
	if errors.Is(err, pebble.ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decoding %s: %w", name, err)
	}
	return nil
}

// SetMeta writes v under name durably; DeleteMeta removes it. Each name is
// written by one owner, so no two writers race on a record.
func (s *Store) SetMeta(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", name, err)
	}
	if err := s.view.Write(func(batch *pebble.Batch) error { return batch.Set([]byte(prefixMeta+name), b, nil) }); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// DeleteMeta removes the record under name.
func (s *Store) DeleteMeta(name string) error {
	if err := s.view.Write(func(b *pebble.Batch) error { return b.Delete([]byte(prefixMeta+name), nil) }); err != nil {
		return fmt.Errorf("deleting %s: %w", name, err)
	}
	return nil
}

// EachMeta calls fn with the name and bytes of every record under
// prefix, in name order. It reads them all first, so fn may write.
func (s *Store) EachMeta(prefix string, fn func(name string, v []byte) error) error {
	lo := []byte(prefixMeta + prefix)
	hi := append(slices.Clone(lo), 0xff)
	var names []string
	var values [][]byte
	err := s.view.Read(func(r pebble.Reader) error {
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return fmt.Errorf("listing %s: %w", prefix, err)
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			names, values = append(names, string(it.Key()[len(prefixMeta):])), append(values, slices.Clone(it.Value()))
		}
		return it.Error()
	})
	if err != nil {
		return err
	}
	for i, name := range names {
		if err := fn(name, values[i]); err != nil {
			return err
		}
	}
	return nil
}

// Stopped is the failed write that stopped the event store's writes (Pebble's commit pipeline
// cannot go on after one), nil while it takes them. Reads go on, showing what was
// acknowledged before it; reopening clears it.
func (s *Store) Stopped() error { return s.guard.Stopped() }

// PebbleMemory is what the store's Pebble holds outside the Go heap when built with cgo: its
// block cache's bytes and its live WAL's (pebbledb.Acked.Memory).
func (s *Store) PebbleMemory() pebbledb.Mem { return s.view.Memory() }
