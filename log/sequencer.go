package log

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/histor-observer/histor/internal/pebbledb"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/mtl"
)

// Entry is one label to append.
type Entry struct {
	ID    string // the label's "id" member (urn:uuid:…); unique in the log
	Label []byte // JCS bytes of the signed label, at most MaxEntryBytes
}

// Evidence is one content-addressed body stored beside the labels.
type Evidence struct {
	Kind string // one of EvidenceKinds()
	Body []byte // JCS bytes; addressed by SRI of Body
}

// maxEvidenceBytes bounds one evidence body (a tool set is the big one).
const maxEvidenceBytes = 4 << 20

type appendReq struct {
	entries []Entry
	ev      []Evidence
	done    chan appendResult // buffered, one answer
}

type appendResult struct {
	first uint64
	head  Head
	err   error
}

// Append sequences entries (and stores ev) and returns once they are durable
// under a newly signed head; first is the index of entries[0]. Concurrent
// calls share batches. The entries of one call are contiguous. If ctx ends
// first, Append returns ctx's error and the entries may or may not be in
// the log. After a failed write or sync (a *StoppedError) every Append is
// refused; entries refused that way are never served by this Log, though a
// later Open may find them durable after all.
func (l *Log) Append(ctx context.Context, entries []Entry, ev []Evidence) (uint64, error) {
	if err := checkAppend(entries, ev); err != nil {
		return 0, err
	}
	r, err := l.submit(ctx, &appendReq{entries: entries, ev: ev, done: make(chan appendResult, 1)})
	return r.first, err
}

// SignHead signs a head over the current tree with a fresh timestamp.
func (l *Log) SignHead(ctx context.Context) (Head, error) {
	r, err := l.submit(ctx, &appendReq{done: make(chan appendResult, 1)})
	return r.head, err
}

func (l *Log) submit(ctx context.Context, req *appendReq) (appendResult, error) {
	select {
	case l.reqs <- req:
	case <-ctx.Done():
		return appendResult{}, ctx.Err()
	case <-l.quit:
		return appendResult{}, ErrClosed
	case <-l.halted: // the sequencer may be held by a store that cannot go on
		return appendResult{}, l.failure()
	}
	select {
	case r := <-req.done:
		return r, r.err
	case <-ctx.Done():
		return appendResult{}, ctx.Err()
	case <-l.halted:
		// A batch applied before the failure may still be answered; any other waits
		// on a store that cannot go on (Pebble may have stalled its write for good).
		select {
		case r := <-req.done:
			return r, r.err
		default:
			return appendResult{}, l.failure()
		}
	case <-l.stopped:
		select {
		case r := <-req.done:
			return r, r.err
		default:
			return appendResult{}, ErrClosed
		}
	}
}

func checkAppend(entries []Entry, ev []Evidence) error {
	if len(entries) > MaxAppend {
		return &RangeError{What: fmt.Sprintf("%d entries in one append, at most %d", len(entries), MaxAppend)}
	}
	ids := make(map[string]bool, len(entries))
	for _, e := range entries {
		switch {
		case e.ID == "":
			return &EntryError{Reason: "empty label id"}
		case len(e.Label) == 0 || len(e.Label) > MaxEntryBytes:
			return &EntryError{ID: e.ID, Reason: fmt.Sprintf("label is %d bytes, want 1..%d", len(e.Label), MaxEntryBytes)}
		case ids[e.ID]:
			return &EntryError{ID: e.ID, Reason: "label id twice in one append"}
		}
		ids[e.ID] = true
	}
	for _, e := range ev {
		if !evidenceKinds[e.Kind] {
			return &EntryError{ID: e.Kind, Reason: "unknown evidence kind"}
		}
		if len(e.Body) == 0 || len(e.Body) > maxEvidenceBytes {
			return &EntryError{ID: mtl.SRI(e.Body), Reason: fmt.Sprintf("evidence is %d bytes, want 1..%d", len(e.Body), maxEvidenceBytes)}
		}
	}
	return nil
}

// sequence is the one goroutine that writes: it takes a request, gathers
// more (up to MaxBatch entries), stages them as one batch on top of the
// previous (possibly not yet synced) one, and applies it to Pebble. The
// batch's WAL sync is waited for by publish. While a sync is in flight the
// sequencer keeps gathering (group commit), so batches stay large; with
// none in flight it takes what is queued and goes.
func (l *Log) sequence(staged chan<- *pendingBatch, synced <-chan struct{}) {
	defer close(staged)
	inflight := 0
	for {
		var req *appendReq
		select {
		case <-l.quit:
			return
		case req = <-l.reqs:
		case <-synced:
			inflight--
			continue
		}
		batch, n := []*appendReq{req}, len(req.entries)
		for n < l.cfg.MaxBatch {
			if inflight == 0 {
				batch, n = l.drain(batch, n)
				break
			}
			select {
			case r := <-l.reqs:
				batch, n = append(batch, r), n+len(r.entries)
			case <-synced:
				inflight--
			}
		}
		if p := l.apply(batch); p != nil {
			staged <- p
			inflight++
		}
	}
}

// batchBytes estimates a batch's encoded size, so Pebble allocates its
// buffer once instead of doubling it through a megabyte.
func batchBytes(batch []*appendReq) int {
	n := 64 << 10 // tiles and the head
	for _, req := range batch {
		for _, e := range req.entries {
			n += len(e.Label) + 2*len(e.ID) + 48
		}
		for _, e := range req.ev {
			n += len(e.Body) + 80
		}
	}
	return n
}

// drain adds the requests already queued, up to MaxBatch entries.
func (l *Log) drain(batch []*appendReq, n int) ([]*appendReq, int) {
	for n < l.cfg.MaxBatch {
		select {
		case r := <-l.reqs:
			batch, n = append(batch, r), n+len(r.entries)
		default:
			return batch, n
		}
	}
	return batch, n
}

// pendingBatch is a batch applied to the store whose sync is not yet known
// to be done.
type pendingBatch struct {
	reqs    []*appendReq
	b       kvBatch
	wait    func() error // the store's sync of b
	applied time.Time    // when b was applied, for the sync latency
	entries int
	rec     *headRecord
	tiles   *tileState
	bundle  []byte // the partial entry bundle after this batch
	firsts  []uint64
	errs    []error
	evKeys  []string // evidence keys first written by this batch
}

// apply stages and applies one batch, advancing the sequencer's tip.
//
// A failed write stops the log: every later Append is refused with a
// *StoppedError naming the cause. The store cannot say how much of a batch
// whose write failed reached the disk (a WAL record may be half written),
// and the sequencer's tip would no longer be what the store holds, so going
// on could sign a head over a tree the store does not have. The batches
// applied before it are still published once their syncs succeed, and the
// next Open re-checks whatever the disk holds.
//
// A failed read while staging (the lookup of a label id) refuses only the
// request it was for, with the error; nothing of that request is written,
// the store is unchanged by a read, and the log goes on.
func (l *Log) apply(batch []*appendReq) *pendingBatch {
	if err := l.failure(); err != nil {
		l.metrics.failedAll(len(batch))
		answerAll(batch, appendResult{err: err})
		return nil
	}
	p := &pendingBatch{reqs: batch, b: l.store.newBatch(batchBytes(batch)), tiles: l.tiles.clone()}
	p.bundle = append(make([]byte, 0, len(l.bundle)+batchBytes(batch)), l.bundle...)
	p.firsts, p.errs = l.stage(p, batch)
	p.entries = int(p.tiles.size - l.tiles.size)
	rec, err := l.newHead(p.tiles, l.tip.Seq+1)
	if err == nil {
		l.putHead(p.b, rec)
		l.markPending(p.evKeys) // before the batch becomes visible
		p.applied = time.Now()
		p.wait, err = l.store.apply(p.b)
	}
	if err != nil {
		err = l.fail("write", err)
		l.metrics.failedAll(len(batch))
		answerAll(batch, appendResult{err: err})
		return nil
	}
	p.rec = rec
	l.tip, l.tiles, l.bundle = *rec, p.tiles, p.bundle
	l.noteIDs(batch, p.errs)
	return p
}

// publish waits for each applied batch's sync, in order, then makes its
// head the latest and answers its callers.
//
// A failed sync stops the log for good, and neither that batch nor any
// batch after it is ever published by this Log: after a failed fsync the
// kernel may have dropped the unwritten pages, so a later sync that
// succeeds proves nothing about the earlier batch, and the store's state is
// unknown. Its callers and every later one get a *StoppedError naming the
// sync's error; the next Open decides from what is on disk.
func (l *Log) publish(staged <-chan *pendingBatch, synced chan<- struct{}) {
	defer close(l.stopped)
	var broken error // set by the first failed sync
	for p := range staged {
		err := p.wait()
		select {
		case synced <- struct{}{}:
		default: // the sequencer has stopped; nobody counts any more
		}
		if err != nil && broken == nil {
			broken = l.fail("sync", err)
		}
		if broken != nil {
			l.metrics.failedAll(len(p.reqs))
			answerAll(p.reqs, appendResult{err: broken})
			continue
		}
		l.metrics.synced(p.entries, time.Since(p.applied))
		l.mu.Lock()
		l.latest = *p.rec
		for _, k := range p.evKeys {
			delete(l.pendingEv, k)
		}
		l.mu.Unlock()
		l.metrics.answered(p.reqs, p.errs, p.rec.Size)
		for i, req := range p.reqs {
			req.done <- appendResult{first: p.firsts[i], head: p.rec.Head, err: p.errs[i]}
		}
		if l.cfg.OnHead != nil {
			l.cfg.OnHead(p.rec.Head)
		}
	}
}

// fail stops the log after a failed store call (what: "write" or "sync")
// and returns the error its callers get; the first failure is the one later
// appends are refused with.
func (l *Log) fail(what string, err error) error {
	stopped := &StoppedError{Op: what, Err: err}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed == nil {
		l.failed = stopped
		if l.halted != nil {
			close(l.halted)
		}
		l.logger.Error("log stopped", "op", what, "err", err)
	}
	return stopped
}

// markPending hides evidence keys from Evidence until publish sees their
// batch synced; after a failed write they stay hidden.
func (l *Log) markPending(keys []string) {
	if len(keys) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pendingEv == nil {
		l.pendingEv = map[string]struct{}{}
	}
	for _, k := range keys {
		l.pendingEv[k] = struct{}{}
	}
}

// Stopped is the *StoppedError that stopped the log, or nil while it takes
// appends. Reads go on after it; a node reports it on /health.
func (l *Log) Stopped() error { return l.failure() }

// watchBackground stops the log at the first failed flush or compaction of its store,
// until Close.
func (l *Log) watchBackground(bg *pebbledb.Background) {
	select {
	case <-bg.Failed():
		err := bg.Err()
		op := "flush"
		if be := (*pebbledb.BackgroundError)(nil); errors.As(err, &be) {
			op = be.Op
		}
		l.fail(op, err)
	case <-l.quit:
	}
}

func (l *Log) failure() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.failed
}

// noteIDs adds the applied ids to the filter, rebuilding it larger when it
// holds more than it was sized for.
func (l *Log) noteIDs(batch []*appendReq, errs []error) {
	var n uint64
	for _, req := range batch {
		n += uint64(len(req.entries))
	}
	if l.ids.n+n > l.ids.capacity {
		ids, err := loadIDFilter(l.store, l.tiles.size)
		if err == nil {
			l.ids = ids
			return
		}
		l.logger.Error("rebuilding label id filter", "err", err)
	}
	for i, req := range batch {
		if errs[i] == nil {
			for _, e := range req.entries {
				l.ids.add(e.ID)
			}
		}
	}
}

func answerAll(batch []*appendReq, r appendResult) {
	for _, req := range batch {
		req.done <- r
	}
}

// stage adds each request's entries and evidence to the batch, its tiles
// and its bundle; a request naming a label id already in the log is refused
// whole.
func (l *Log) stage(p *pendingBatch, batch []*appendReq) ([]uint64, []error) {
	b, tiles := p.b, p.tiles
	firsts, errs := make([]uint64, len(batch)), make([]error, len(batch))
	pending := map[string]bool{}
	var hashes [][32]byte
	next := tiles.size
	for i, req := range batch {
		if errs[i] = l.checkNew(req.entries, pending); errs[i] != nil {
			continue
		}
		firsts[i] = next
		for _, e := range req.entries {
			pending[e.ID] = true
			b.set(labelKey(e.ID), binary.BigEndian.AppendUint64(nil, next))
			hashes = append(hashes, format.LeafHash(e.Label))
			p.bundle = format.AppendBundleEntry(p.bundle, e.Label)
			next++
			if next%tileWidth == 0 {
				b.set(bundleKey(next/tileWidth-1), p.bundle)
				p.bundle = p.bundle[:0]
			}
		}
		for _, e := range req.ev {
			key := evidenceKey(e.Kind, mtl.SRI(e.Body))
			// A failed read here only costs writing the body again: it is
			// content-addressed, so a second copy is the same bytes.
			if _, err := l.store.get(key); err == nil {
				continue // stored already (and pending, if not yet durable)
			}
			b.set(key, e.Body)
			p.evKeys = append(p.evKeys, string(key))
		}
	}
	if len(p.bundle) > 0 {
		b.set(bundleKey(next/tileWidth), p.bundle)
	}
	tiles.appendLeaves(hashes, func(level int, n uint64, data []byte) {
		b.set(tileKey(level, n), encodeTile(data))
	})
	return firsts, errs
}

func (l *Log) checkNew(entries []Entry, pending map[string]bool) error {
	for _, e := range entries {
		if pending[e.ID] {
			return &EntryError{ID: e.ID, Reason: "label id already in the log"}
		}
		if !l.ids.mayContain(e.ID) {
			continue
		}
		_, err := l.store.get(labelKey(e.ID))
		if err == nil {
			return &EntryError{ID: e.ID, Reason: "label id already in the log"}
		}
		if !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("looking up label id: %w", err)
		}
	}
	return nil
}

// newHead signs a head over tiles. Its time is the clock's, truncated to a
// second, but never before the previous head's.
func (l *Log) newHead(tiles *tileState, seq uint64) (*headRecord, error) {
	t := l.cfg.Now().UTC().Truncate(1e9)
	if seq > 0 && t.Before(l.tip.Time) {
		t = l.tip.Time
	}
	rec := &headRecord{Seq: seq, Head: Head{Size: tiles.size, Root: tiles.root(), Time: t}}
	var err error
	if rec.STH, err = format.SignTypedSTH(l.cfg.STHType, l.cfg.Key, l.cfg.DID, rec.Size, rec.Root, t); err != nil {
		return nil, fmt.Errorf("signing head: %w", err)
	}
	cp := format.Checkpoint{Origin: l.cfg.Origin, Size: rec.Size, Root: rec.Root}
	if rec.Checkpoint, err = format.SignCheckpoint(l.signer, cp); err != nil {
		return nil, fmt.Errorf("signing checkpoint: %w", err)
	}
	return rec, nil
}

func (l *Log) putHead(b kvBatch, rec *headRecord) {
	v := rec.encode()
	b.set(headKey(rec.Size, rec.Seq), v)
	b.set(keyLatest, v)
}
