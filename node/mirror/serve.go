package mirror

import (
	"errors"
	"fmt"

	"filippo.io/torchwood"
	"github.com/cockroachdb/pebble"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/log/format"
)

// Checkpoint is the newest checkpoint of did's log the mirror holds whole, as the observer
// signed it (with the cosignatures it carried); nil when none.
func (s *Store) Checkpoint(did string) []byte {
	if l := s.log(did); l != nil {
		return l.snapshot().Done
	}
	return nil
}

// Tile serves a tlog-tiles path ("tile/<L>/<N>[.p/<W>]" or "tile/entries/<N>[.p/<W>]") of
// did's log from the mirror, within the tree it holds whole; ErrNotFound otherwise.
func (s *Store) Tile(did, path string) ([]byte, error) {
	l := s.log(did)
	if l == nil {
		return nil, fmt.Errorf("observer %s: %w", did, ErrNotFound)
	}
	size := l.snapshot().done.Size
	t, err := torchwood.ParseTilePath(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if t.L == -1 {
		return s.bundle(did, t, size)
	}
	// A tile at level L holds the hashes of the complete subtrees of 2^8L leaves numbered
	// N·256 to N·256+W; a partial one only at the tree's right edge.
	if t.L > 6 {
		return nil, fmt.Errorf("tile %s: %w", path, ErrNotFound)
	}
	last := uint64(t.N)*tileWidth + uint64(t.W)
	if whole := size >> (tileHeight * t.L); last > whole || (t.W < tileWidth && last != whole) {
		return nil, fmt.Errorf("tile %s of a tree of %d: %w", path, size, ErrNotFound)
	}
	data, err := tlog.ReadTileData(t, &localHashes{db: s.db, did: did})
	if err != nil {
		return nil, fmt.Errorf("tile %s: %w", path, ErrNotFound)
	}
	return data, nil
}

func (s *Store) bundle(did string, t tlog.Tile, size uint64) ([]byte, error) {
	start := uint64(t.N) * tileWidth
	if start+uint64(t.W) > size {
		return nil, fmt.Errorf("entry bundle %d.%d of a tree of %d: %w", t.N, t.W, size, ErrNotFound)
	}
	var out []byte
	for i := range uint64(t.W) {
		e, err := s.entry(did, start+i)
		if err != nil {
			return nil, err
		}
		out = format.AppendBundleEntry(out, e)
	}
	return out, nil
}

func (s *Store) entry(did string, n uint64) ([]byte, error) {
	v, closer, err := s.db.Get(entryKey(did, n))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("entry %d of %s: %w", n, did, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading mirrored entry %d of %s: %w", n, did, err)
	}
	defer closer.Close()
	return append([]byte(nil), v...), nil
}

// Evidence serves a descriptor the mirror keeps, by SRI: one an acknowledged batch wrote.
func (s *Store) Evidence(sri string) ([]byte, error) {
	v, ok, err := s.read(evidenceKey(sri))
	if err != nil {
		return nil, fmt.Errorf("reading mirrored evidence: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("evidence %s: %w", sri, ErrNotFound)
	}
	return v, nil
}

// Proof is a mirrored entry with its inclusion proof under the newest checkpoint the mirror
// holds whole: what anyone needs to check it with the observer's key alone.
type Proof struct {
	Entry      []byte
	Hashes     [][32]byte
	Checkpoint []byte
	Size       uint64
}

// Prove returns leaf n of did's log, proven under the mirror's checkpoint.
func (s *Store) Prove(did string, n uint64) (Proof, error) {
	l := s.log(did)
	if l == nil {
		return Proof{}, fmt.Errorf("observer %s: %w", did, ErrNotFound)
	}
	m := l.snapshot()
	if n >= m.done.Size {
		return Proof{}, fmt.Errorf("entry %d of %s: not under the mirrored checkpoint: %w", n, did, ErrNotFound)
	}
	e, err := s.entry(did, n)
	if err != nil {
		return Proof{}, err
	}
	p, err := tlog.ProveRecord(int64(m.done.Size), int64(n), &localHashes{db: s.db, did: did})
	if err != nil {
		return Proof{}, fmt.Errorf("proving mirrored entry %d of %s: %w", n, did, err)
	}
	out := Proof{Entry: e, Checkpoint: m.Done, Size: m.done.Size, Hashes: make([][32]byte, len(p))}
	for i, h := range p {
		out.Hashes[i] = h
	}
	return out, nil
}
