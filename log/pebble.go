package log

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/histor-observer/histor/internal/pebbledb"
)

// pebbleStore is the kvStore a node runs: one Pebble database, its WAL
// synced on every batch.
type pebbleStore struct {
	db    *pebble.DB
	cache *pebble.Cache
	// closed is set by close; Pebble panics on a call after Close, so the
	// log's readers, which may outlive it, get ErrClosed instead. It is set
	// under mu, where each read counts itself in readers, so close can wait
	// for the reads under way: closing Pebble under an open iterator leaks it
	// and makes its next step panic.
	mu      sync.Mutex
	closed  atomic.Bool
	readers sync.WaitGroup
	bg      *pebbledb.Background
	// fatal is set once Pebble's commit pipeline met a fatal error: it cannot go on, and
	// may hold its locks for good, so close waits for it only so long.
	fatal atomic.Bool
}

// enter counts a read in readers, unless the store is closed.
func (s *pebbleStore) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return false
	}
	s.readers.Add(1)
	return true
}

func (s *pebbleStore) get(key []byte) ([]byte, error) {
	if !s.enter() {
		return nil, errStoreClosed
	}
	defer s.readers.Done()
	return pebbleGet(s.db, key)
}

func (s *pebbleStore) iter(lower, upper []byte, reverse bool) (kvIter, error) {
	if !s.enter() {
		return nil, errStoreClosed
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		s.readers.Done()
		return nil, err
	}
	return &pebbleIter{it: it, reverse: reverse, done: s.readers.Done}, nil
}

func (s *pebbleStore) newBatch(sizeHint int) kvBatch {
	return pebbleBatch{s.db.NewBatchWithSize(sizeHint)}
}

// apply hands the batch to Pebble's commit pipeline, which makes it visible
// and writes the WAL; wait is the WAL sync, so the next batch can be built
// while it runs.
func (s *pebbleStore) apply(b kvBatch) (func() error, error) {
	pb := b.(pebbleBatch).b
	if s.closed.Load() {
		pb.Close()
		return nil, errStoreClosed
	}
	if err := applyNoSyncWait(s.db, pb); err != nil {
		if f := (*pebbledb.Fatal)(nil); errors.As(err, &f) {
			s.fatal.Store(true)
		}
		return nil, err
	}
	return func() error {
		err := pb.SyncWait()
		pb.Close()
		return err
	}, nil
}

// applyNoSyncWait applies pb, turning Pebble's fatal commit error (a WAL write
// that failed, or a new WAL it could not make) into an error: the log stops at it
// and calls Apply no more, as Pebble's commit pipeline cannot go on after one.
func applyNoSyncWait(db *pebble.DB, pb *pebble.Batch) error {
	err := pebbledb.Apply(func() error { return db.ApplyNoSyncWait(pb, pebble.Sync) })
	if err != nil {
		pb.Close()
	}
	return err
}

// memory is what Pebble holds in memory outside the Go heap (its allocations are C's when
// built with cgo): the bytes in the block cache, and the live WAL's, which the memtables
// hold until they are flushed. Zero after close, and once a failure stopped the store: then
// Pebble's mutex may be held for good, and Metrics would wait on it for ever.
func (s *pebbleStore) memory() pebbledb.Mem {
	if s.fatal.Load() || s.bg.Err() != nil || !s.enter() {
		return pebbledb.Mem{}
	}
	defer s.readers.Done()
	return pebbledb.Memory(s.db)
}

func (s *pebbleStore) close() error {
	s.mu.Lock()
	if s.closed.Swap(true) {
		s.mu.Unlock()
		return errStoreClosed
	}
	s.mu.Unlock()
	if !waitGroup(&s.readers, pebbledb.FatalCloseWait) {
		return fmt.Errorf("closing pebble: reads still under way after %s; the process's exit releases it", pebbledb.FatalCloseWait)
	}
	if !s.fatal.Load() && s.bg.Err() == nil {
		err := s.db.Close()
		s.cache.Unref()
		return err
	}
	// After a fatal commit error, or a flush or compaction that failed, Pebble may never
	// finish closing (a WAL it could not rotate leaves its mutex held; a write stalled for
	// good holds the commit pipeline): wait a while, then leave it to the process's exit.
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("closing pebble after a fatal error: %v", p)
			}
		}()
		done <- s.db.Close()
	}()
	select {
	case err := <-done:
		s.cache.Unref()
		return err
	case <-time.After(pebbledb.FatalCloseWait):
		return fmt.Errorf("closing pebble after a failure: not closed after %s; the process's exit releases it", pebbledb.FatalCloseWait)
	}
}

type pebbleBatch struct{ b *pebble.Batch }

func (b pebbleBatch) set(key, value []byte) { _ = b.b.Set(key, value, nil) }

type pebbleIter struct {
	it      *pebble.Iterator
	reverse bool
	started bool
	done    func() // tells the store the read is over
}

func (i *pebbleIter) next() bool {
	switch {
	case !i.started && i.reverse:
		i.started = true
		return i.it.Last()
	case !i.started:
		i.started = true
		return i.it.First()
	case i.reverse:
		return i.it.Prev()
	}
	return i.it.Next()
}

func (i *pebbleIter) key() []byte   { return i.it.Key() }
func (i *pebbleIter) value() []byte { return i.it.Value() }
func (i *pebbleIter) close() error {
	err := i.it.Close()
	if i.done != nil {
		i.done()
		i.done = nil
	}
	return err
}

// waitGroup waits for wg at most d, and says whether it is done.
func waitGroup(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// openPebble opens the store in dir after checking that a non-empty dir
// looks like a whole Pebble store, and that every live table has the size
// the MANIFEST recorded (Pebble itself reads a table only when asked, so a
// truncated one would otherwise pass until the first unlucky read).
func openPebble(dir string, o storeOptions, logger *slog.Logger, readOnly bool) (*pebbleStore, error) {
	bg := pebbledb.NewBackground(logger)
	db, cache, err := openPebbleDB(dir, o, logger, bg, readOnly)
	if err != nil {
		return nil, err
	}
	return &pebbleStore{db: db, cache: cache, bg: bg}, nil
}

// storeOptions are how a log's Pebble store is opened.
type storeOptions struct {
	fs         vfs.FS
	cacheBytes int64
	// memTableBytes replaces the append path's memtable size when set; tests
	// make it small to have Pebble flush and compact while they append.
	memTableBytes uint64
}

func openPebbleDB(dir string, o storeOptions, logger *slog.Logger, bg *pebbledb.Background, readOnly bool) (db *pebble.DB, cache *pebble.Cache, err error) {
	fs := o.fs
	if err := checkDirShape(fs, dir, readOnly); err != nil {
		return nil, nil, err
	}
	c := pebble.NewCache(o.cacheBytes)
	defer func() {
		if p := recover(); p != nil {
			perr, ok := p.(error)
			if !ok {
				perr = fmt.Errorf("%v", p)
			}
			err = corrupt("pebble store", perr)
		}
		if err != nil {
			c.Unref()
		}
	}()
	opts := pebbleOptions(c, pebbledb.Logger{L: logger}, readOnly)
	opts.FS = fs
	opts.EventListener = bg.Listener()
	if o.memTableBytes > 0 {
		opts.MemTableSize = o.memTableBytes
	}
	db, err = pebble.Open(dir, opts)
	if err != nil {
		return nil, nil, corrupt("pebble store", err)
	}
	if err := checkTables(fs, db, dir); err != nil {
		db.Close()
		return nil, nil, err
	}
	if !readOnly {
		// Replaying the WAL fills a memtable sized for the append path (64 MiB);
		// flushing it now returns that memory, so a node that mostly serves
		// reads stays small, and the next start replays nothing.
		if err := flushReplayed(db, bg); err != nil {
			db.Close()
			return nil, nil, corrupt("flushing the recovered memtable", err)
		}
	}
	return db, c, nil
}

func checkDirShape(fs vfs.FS, dir string, readOnly bool) error {
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		if readOnly {
			return ErrNoLog
		}
		return fs.MkdirAll(dir, 0o700)
	}
	if err != nil {
		return fmt.Errorf("reading log directory: %w", err)
	}
	if i := slices.Index(names, creatingMarker); i >= 0 {
		if readOnly {
			return fmt.Errorf("%w: its creation never finished (%s is there)", ErrNoLog, creatingMarker)
		}
		names = slices.Delete(names, i, i+1)
	}
	if len(names) == 0 {
		if readOnly {
			return ErrNoLog
		}
		return nil
	}
	var current bool
	var options string // the newest; names sort by their file number
	for _, n := range names {
		current = current || n == "CURRENT"
		if strings.HasPrefix(n, "OPTIONS-") && n > options {
			options = n
		}
	}
	if !current {
		return corrupt("pebble CURRENT file", errors.New("missing from a non-empty directory"))
	}
	if options == "" {
		return corrupt("pebble OPTIONS file", errors.New("missing"))
	}
	return checkOptionsFile(fs, fs.PathJoin(dir, options))
}

// checkOptionsFile refuses a truncated or emptied OPTIONS file, which Pebble
// itself would accept silently.
func checkOptionsFile(fs vfs.FS, path string) error {
	f, err := fs.Open(path)
	if err != nil {
		return corrupt("pebble OPTIONS file", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxOptionsBytes))
	if err != nil {
		return corrupt("pebble OPTIONS file", err)
	}
	text := string(b)
	if !strings.Contains(text, "[Version]") || !strings.Contains(text, "[Options]") || !strings.HasSuffix(text, "\n") {
		return corrupt("pebble OPTIONS file "+fs.PathBase(path), errors.New("truncated or not Pebble's"))
	}
	return nil
}

// maxOptionsBytes bounds the OPTIONS file read (Pebble's is about 2 KiB).
const maxOptionsBytes = 1 << 20

// checkTables refuses a store whose MANIFEST lists a table that is missing or of another
// size on disk. Pebble compacts in the background from Open on and then deletes the tables a
// compaction replaced, so a table that vanished between listing and stat is missing only if
// it is still listed afterwards: a table once obsolete never becomes live again.
func checkTables(fs vfs.FS, db *pebble.DB, dir string) error {
	live, err := liveTables(db)
	if err != nil {
		return err
	}
	for name, size := range live {
		fi, err := fs.Stat(fs.PathJoin(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			now, lerr := liveTables(db)
			if lerr != nil {
				return lerr
			}
			if _, still := now[name]; !still {
				continue // compacted away and deleted since the first listing
			}
		}
		if err != nil {
			return corrupt("pebble table "+name, err)
		}
		if size >= 0 && uint64(fi.Size()) != uint64(size) {
			return corrupt("pebble table "+name,
				fmt.Errorf("%d bytes on disk, %d in the MANIFEST", fi.Size(), size))
		}
	}
	return nil
}

// liveTables lists the tables of the current version by file name, with the size the
// MANIFEST records for each, or -1 for a virtual table (whose backing file is larger).
func liveTables(db *pebble.DB) (map[string]int64, error) {
	levels, err := db.SSTables()
	if err != nil {
		return nil, corrupt("pebble table list", err)
	}
	live := map[string]int64{}
	for _, level := range levels {
		for _, t := range level {
			name := fmt.Sprintf("%06d.sst", t.BackingSSTNum)
			live[name] = int64(t.Size)
			if t.Virtual {
				live[name] = -1
			}
		}
	}
	return live, nil
}

// pebbleGet reads key, copying the value; a missing key is ErrNotFound.
func pebbleGet(r pebble.Reader, key []byte) ([]byte, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), v...)
	return out, closer.Close()
}

// pebbleOptions are tuned for the append path: a large memtable so batches
// of 1 KiB labels rarely stall on flushes, one compaction at a time so the
// sequencer keeps a core, and bloom filters because every append looks up
// its label ids.
func pebbleOptions(cache *pebble.Cache, logger pebble.Logger, readOnly bool) *pebble.Options {
	opts := &pebble.Options{
		Cache:                       cache,
		MemTableSize:                64 << 20,
		MemTableStopWritesThreshold: 2,
		L0CompactionThreshold:       4,
		L0StopWritesThreshold:       32,
		LBaseMaxBytes:               256 << 20,
		MaxConcurrentCompactions:    func() int { return 1 },
		Logger:                      logger,
		ReadOnly:                    readOnly,
		ErrorIfNotExists:            readOnly,
	}
	opts.Levels = make([]pebble.LevelOptions, 7)
	for i := range opts.Levels {
		opts.Levels[i] = pebble.LevelOptions{
			BlockSize:      32 << 10,
			FilterPolicy:   bloom.FilterPolicy(10),
			TargetFileSize: 8 << 20 << i,
		}
	}
	return opts.EnsureDefaults()
}

// flushReplayed flushes the memtable Open replayed from the WAL, or returns the error of a
// flush that failed: Pebble's own Flush would wait for ever on a flush that never succeeds.
func flushReplayed(db *pebble.DB, b *pebbledb.Background) error {
	done, err := db.AsyncFlush()
	if err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-b.Failed():
		return b.Err()
	}
}
