package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/log/format"
)

// HeadAt returns the first durable head signed at size: a head served for
// a size never changes, as HISTOR keeps one head per size, even when a
// later SignHead at the same size gave the latest a fresh timestamp.
func (l *Log) HeadAt(size uint64) (Head, error) {
	l.mu.RLock()
	latest := l.latest
	l.mu.RUnlock()
	if size > latest.Size {
		return Head{}, ErrNotFound
	}
	lower := binary.BigEndian.AppendUint64([]byte{prefixHead}, size)
	it, err := l.store.iter(lower, prefixEnd(lower), false)
	if err != nil {
		return Head{}, fmt.Errorf("reading head %d: %w", size, err)
	}
	var raw []byte
	// The first head at a size has the lowest seq; one above latest's was
	// applied but is not yet synced.
	if it.next() {
		if k := it.key(); binary.BigEndian.Uint64(k[len(k)-8:]) <= latest.Seq {
			raw = append([]byte(nil), it.value()...)
		}
	}
	if err := it.close(); err != nil {
		return Head{}, fmt.Errorf("reading head %d: %w", size, err)
	}
	if raw == nil {
		return Head{}, ErrNotFound
	}
	rec, err := decodeHead(raw)
	if err != nil {
		return Head{}, corrupt(fmt.Sprintf("head %d", size), err)
	}
	return rec.Head, nil
}

// HeadIncluding returns the first durable head whose tree holds the entry
// at index: the head signed by the batch that appended it, so its time is
// when the entry became durable.
func (l *Log) HeadIncluding(index uint64) (Head, error) {
	l.mu.RLock()
	latest := l.latest
	l.mu.RUnlock()
	if index >= latest.Size {
		return Head{}, ErrNotFound
	}
	lower := binary.BigEndian.AppendUint64([]byte{prefixHead}, index+1)
	it, err := l.store.iter(lower, []byte{prefixHead + 1}, false)
	if err != nil {
		return Head{}, fmt.Errorf("reading the head of entry %d: %w", index, err)
	}
	var raw []byte
	for raw == nil && it.next() {
		// A head above latest's seq was applied but is not yet synced.
		if k := it.key(); binary.BigEndian.Uint64(k[len(k)-8:]) <= latest.Seq {
			raw = append([]byte(nil), it.value()...)
		}
	}
	if err := it.close(); err != nil {
		return Head{}, fmt.Errorf("reading the head of entry %d: %w", index, err)
	}
	if raw == nil {
		return Head{}, ErrNotFound
	}
	rec, err := decodeHead(raw)
	if err != nil {
		return Head{}, corrupt(fmt.Sprintf("head of entry %d", index), err)
	}
	return rec.Head, nil
}

// Entry returns the label at index.
func (l *Log) Entry(index uint64) ([]byte, error) {
	if index >= l.Size() {
		return nil, ErrNotFound
	}
	out, err := l.Entries(index, index+1)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// Entries returns the labels [start, end); end must not pass Size and the
// range must not exceed MaxRange.
func (l *Log) Entries(start, end uint64) ([][]byte, error) {
	out := make([][]byte, 0, min(end-start, MaxRange))
	err := l.EachEntry(start, end, func(_ uint64, label []byte) error {
		out = append(out, bytes.Clone(label))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EachEntry calls fn with each label of [start, end) in order, stopping at
// fn's first error. label is only valid during the call: a reader that keeps
// little of each label holds one entry bundle at a time, not the range.
// end must not pass Size and the range must not exceed MaxRange.
func (l *Log) EachEntry(start, end uint64, fn func(index uint64, label []byte) error) error {
	size := l.Size()
	if start > end || end > size || end-start > MaxRange {
		return &RangeError{What: fmt.Sprintf("entries [%d, %d) of a log of size %d (at most %d at once)", start, end, size, MaxRange)}
	}
	if start == end {
		return nil
	}
	first, last := start/tileWidth, (end-1)/tileWidth
	w := bundleWalk{n: first, next: start, end: end, fn: fn}
	err := scan(l.store, bundleKey(first), bundleKey(last+1), w.visit)
	var ce *CorruptError
	if err != nil && !errors.As(err, &ce) && !w.fnFailed {
		return fmt.Errorf("reading entries: %w", err)
	}
	if err != nil {
		return err
	}
	if w.next != end {
		return corrupt(fmt.Sprintf("entry %d", w.next), errMissing)
	}
	return nil
}

// bundleWalk visits the entries [next, end) bundle by bundle, expecting
// bundle n next.
type bundleWalk struct {
	n, next, end uint64
	fn           func(index uint64, label []byte) error
	fnFailed     bool // the error is fn's, passed on as it is
}

func (w *bundleWalk) visit(key, v []byte) error {
	what := fmt.Sprintf("entry bundle %d", w.n)
	if !bytes.Equal(key, bundleKey(w.n)) {
		return corrupt(what, errMissing)
	}
	offs, err := format.BundleOffsets(v)
	if err != nil {
		return corrupt(what, err)
	}
	for k := range offs {
		if i := w.n*tileWidth + uint64(k); i == w.next && i < w.end {
			if err := w.fn(i, format.BundleEntry(v, offs, k)); err != nil {
				w.fnFailed = true
				return err
			}
			w.next++
		}
	}
	w.n++
	return nil
}

// LabelIndex returns the index of the label with this id.
func (l *Log) LabelIndex(id string) (uint64, error) {
	v, err := l.store.get(labelKey(id))
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, corrupt("label index "+id, errors.New("not 8 bytes"))
	}
	i := binary.BigEndian.Uint64(v)
	if i >= l.Size() {
		// Written by a batch whose head is not yet published.
		return 0, ErrNotFound
	}
	return i, nil
}

// Evidence returns the body of kind stored under sri, once it is durable.
func (l *Log) Evidence(kind, sri string) ([]byte, error) {
	if !evidenceKinds[kind] {
		return nil, ErrNotFound
	}
	key := evidenceKey(kind, sri)
	v, err := l.store.get(key)
	if err != nil {
		return nil, err
	}
	// Checked after the read: a body visible to it was marked pending before
	// it became visible, and is unmarked only once its batch is synced.
	l.mu.RLock()
	_, pending := l.pendingEv[string(key)]
	l.mu.RUnlock()
	if pending {
		return nil, ErrNotFound
	}
	return v, nil
}

func (l *Log) readTile(level int, n uint64) ([]byte, error) {
	return l.store.get(tileKey(level, n))
}

func (l *Log) hashes() hashReader {
	return hashReader{get: func(level int, n uint64) ([]byte, io.Closer, error) {
		// Callers ask only for tiles inside the tree: a missing one is damage.
		v, err := l.store.get(tileKey(level, n))
		if errors.Is(err, ErrNotFound) {
			err = corrupt(fmt.Sprintf("tile %d/%d", level, n), errMissing)
		}
		return v, io.NopCloser(nil), err
	}}
}

// RootAt returns the root of the tree of the first size entries.
func (l *Log) RootAt(size uint64) ([32]byte, error) {
	if size > l.Size() {
		return [32]byte{}, &RangeError{What: fmt.Sprintf("size %d beyond the log's %d", size, l.Size())}
	}
	if size == 0 {
		return emptyRoot, nil
	}
	h, err := tlog.TreeHash(int64(size), l.hashes())
	if err != nil {
		return [32]byte{}, fmt.Errorf("computing root at %d: %w", size, err)
	}
	return h, nil
}

// InclusionProof proves entry index is in the tree of the given size
// (RFC 9162 §2.1.3).
func (l *Log) InclusionProof(index, size uint64) ([][32]byte, error) {
	if size > l.Size() || index >= size {
		return nil, &RangeError{What: fmt.Sprintf("leaf %d in a tree of size %d (log size %d)", index, size, l.Size())}
	}
	p, err := tlog.ProveRecord(int64(size), int64(index), l.hashes())
	if err != nil {
		return nil, fmt.Errorf("proving inclusion of %d in %d: %w", index, size, err)
	}
	return toHashes(p), nil
}

// ConsistencyProof proves the tree of size first is a prefix of the tree of
// size second (RFC 9162 §2.1.4); it is empty when first is 0 or second.
func (l *Log) ConsistencyProof(first, second uint64) ([][32]byte, error) {
	if first > second || second > l.Size() {
		return nil, &RangeError{What: fmt.Sprintf("consistency %d → %d (log size %d)", first, second, l.Size())}
	}
	if first == 0 || first == second {
		return [][32]byte{}, nil
	}
	p, err := tlog.ProveTree(int64(second), int64(first), l.hashes())
	if err != nil {
		return nil, fmt.Errorf("proving consistency %d → %d: %w", first, second, err)
	}
	return toHashes(p), nil
}

func toHashes(p []tlog.Hash) [][32]byte {
	out := make([][32]byte, len(p))
	for i, h := range p {
		out[i] = h
	}
	return out
}

// HashTile returns a C2SP hash tile: width 256 is a full tile, 1..255 a
// partial one. The tile must lie within Size.
func (l *Log) HashTile(level, index uint64, width int) ([]byte, error) {
	if level >= 64 || width < 1 || width > tileWidth {
		return nil, ErrNotFound
	}
	have := l.Size() >> (tileHeight * level)
	if index > have/tileWidth || index*tileWidth+uint64(width) > have {
		return nil, ErrNotFound
	}
	data, err := l.readTile(int(level), index)
	if errors.Is(err, ErrNotFound) {
		return nil, corrupt(fmt.Sprintf("tile %d/%d", level, index), errMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("reading tile %d/%d: %w", level, index, err)
	}
	if w, err := tileValueWidth(data); err != nil || w < width {
		return nil, corrupt(fmt.Sprintf("tile %d/%d", level, index), fmt.Errorf("%d bytes, want width %d", len(data), width))
	}
	return data[:width*hashSize], nil
}

// EntryBundle returns a C2SP entry bundle: entries [256·index, 256·index+width),
// each as a big-endian uint16 length and the label bytes.
func (l *Log) EntryBundle(index uint64, width int) ([]byte, error) {
	if width < 1 || width > tileWidth || index > l.Size()/tileWidth || index*tileWidth+uint64(width) > l.Size() {
		return nil, ErrNotFound
	}
	v, err := l.store.get(bundleKey(index))
	if errors.Is(err, ErrNotFound) {
		return nil, corrupt(fmt.Sprintf("entry bundle %d", index), errMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("reading entry bundle %d: %w", index, err)
	}
	offs, err := format.BundleOffsets(v)
	if err != nil || len(offs) < width {
		return nil, corrupt(fmt.Sprintf("entry bundle %d", index), fmt.Errorf("%d entries, want %d (%v)", len(offs), width, err))
	}
	if width == len(offs) {
		return v, nil
	}
	return v[:offs[width]], nil
}
