package log

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"
)

// Entry is one label to append.
type Entry struct {
	ID    string // the label's "id" member (urn:uuid:…); unique in the log
	Label []byte // JCS bytes of the signed label, at most MaxEntryBytes
}

// Evidence is one content-addressed body stored beside the labels.
type Evidence struct {
	Kind string // "toolsets", "descriptors", "pattern-sets" or "record-sets"
	Body []byte // JCS bytes; addressed by SRI of Body
}

var evidenceKinds = map[string]bool{"toolsets": true, "descriptors": true, "pattern-sets": true, "record-sets": true}

// maxEvidenceBytes bounds one evidence body (a tool set is the big one).
const maxEvidenceBytes = 4 << 20

// SRI returns the subresource-integrity address of a body:
// "sha256-" and the standard base64 of its SHA-256.
func SRI(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

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
// the log.
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
	}
	select {
	case r := <-req.done:
		return r, r.err
	case <-ctx.Done():
		return appendResult{}, ctx.Err()
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
			return &EntryError{ID: SRI(e.Body), Reason: fmt.Sprintf("evidence is %d bytes, want 1..%d", len(e.Body), maxEvidenceBytes)}
		}
	}
	return nil
}

// sequence is the one goroutine that writes: it takes a request, adds every
// request already waiting (up to MaxBatch entries) and commits them as one
// batch.
func (l *Log) sequence() {
	defer close(l.stopped)
	for {
		var req *appendReq
		select {
		case <-l.quit:
			return
		case req = <-l.reqs:
		}
		batch, n := []*appendReq{req}, len(req.entries)
	more:
		for n < l.cfg.MaxBatch {
			select {
			case r := <-l.reqs:
				batch, n = append(batch, r), n+len(r.entries)
			default:
				break more
			}
		}
		l.commit(batch)
	}
}

// commit writes one batch and answers its requests. On a failed write the
// log stops taking appends: what reached the disk is then unknown, and the
// next Open re-checks it.
func (l *Log) commit(batch []*appendReq) {
	if l.failed != nil {
		answerAll(batch, appendResult{err: l.failed})
		return
	}
	b := l.db.NewBatch()
	defer b.Close()
	tiles := l.tiles.clone()
	firsts, errs := l.stage(b, tiles, batch)
	rec, err := l.newHead(tiles, l.latest.Seq+1)
	if err == nil {
		l.putHead(b, rec)
		err = b.Commit(pebble.Sync)
	}
	if err != nil {
		l.failed = fmt.Errorf("log stopped after a failed write: %w", err)
		l.logger.Error("committing batch", "err", err)
		answerAll(batch, appendResult{err: l.failed})
		return
	}
	l.mu.Lock()
	l.latest, l.tiles = *rec, tiles
	l.mu.Unlock()
	for i, req := range batch {
		req.done <- appendResult{first: firsts[i], head: rec.Head, err: errs[i]}
	}
}

func answerAll(batch []*appendReq, r appendResult) {
	for _, req := range batch {
		req.done <- r
	}
}

// stage adds each request's entries and evidence to b and to tiles; a
// request naming a label id already in the log is refused whole.
func (l *Log) stage(b *pebble.Batch, tiles *tileState, batch []*appendReq) ([]uint64, []error) {
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
			_ = b.Set(entryKey(next), e.Label, nil)
			_ = b.Set(labelKey(e.ID), binary.BigEndian.AppendUint64(nil, next), nil)
			hashes = append(hashes, leafHash(e.Label))
			next++
		}
		for _, e := range req.ev {
			_ = b.Set(evidenceKey(e.Kind, SRI(e.Body)), e.Body, nil)
		}
	}
	tiles.appendLeaves(hashes, func(level int, n uint64, data []byte) {
		_ = b.Set(tileKey(level, n), encodeTile(data), nil)
	})
	return firsts, errs
}

func (l *Log) checkNew(entries []Entry, pending map[string]bool) error {
	for _, e := range entries {
		if pending[e.ID] {
			return &EntryError{ID: e.ID, Reason: "label id already in the log"}
		}
		_, err := getValue(l.db, labelKey(e.ID))
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
	if seq > 0 && t.Before(l.latest.Time) {
		t = l.latest.Time
	}
	rec := &headRecord{Seq: seq, Head: Head{Size: tiles.size, Root: tiles.root(), Time: t}}
	var err error
	if rec.STH, err = signSTH(l.cfg.Key, l.cfg.DID, rec.Size, rec.Root, t); err != nil {
		return nil, fmt.Errorf("signing head: %w", err)
	}
	cp := Checkpoint{Origin: l.cfg.Origin, Size: rec.Size, Root: rec.Root}
	if rec.Checkpoint, err = signCheckpoint(l.signer, cp); err != nil {
		return nil, fmt.Errorf("signing checkpoint: %w", err)
	}
	return rec, nil
}

func (l *Log) putHead(b *pebble.Batch, rec *headRecord) {
	v := rec.encode()
	_ = b.Set(headKey(rec.Size, rec.Seq), v, nil)
	_ = b.Set(keyLatest, v, nil)
}
