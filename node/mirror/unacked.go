package mirror

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"
)

// prior is a key's value before a batch not acknowledged; ok is false when it had none.
type prior struct {
	value []byte
	ok    bool
}

// read is what readers outside a Sync see at key: what Pebble holds, unless a batch not
// acknowledged wrote it (in flight, or failed): Pebble applies a batch to what its reads show
// before its WAL sync, and keeps it there when the sync fails, so the index or a descriptor
// would show what a crash loses. Pebble is read first: a batch puts its priors in unacked
// before it is applied and takes them out only once acknowledged.
func (s *Store) read(key []byte) ([]byte, bool, error) {
	v, closer, err := s.db.Get(key)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return nil, false, err
	default:
		v = bytes.Clone(v)
		closer.Close()
	}
	if p, held := s.priorOf(key); held {
		return p.value, p.ok, nil
	}
	return v, err == nil, nil
}

func (s *Store) priorOf(key []byte) (prior, bool) {
	s.unackedMu.Lock()
	defer s.unackedMu.Unlock()
	p, held := s.unacked[string(key)]
	return p, held
}

// commitBatch commits b synced. Until it is acknowledged, the values its index and evidence
// keys had before wait in unacked; after a failure they stay there, as the store stopped.
func (s *Store) commitBatch(b *pebble.Batch) error {
	keys, err := s.holdPriors(b)
	if err != nil {
		return err
	}
	if err := s.guard.Apply(func() error { return b.Commit(pebble.Sync) }); err != nil {
		return err
	}
	s.unackedMu.Lock()
	defer s.unackedMu.Unlock()
	for _, k := range keys {
		delete(s.unacked, k)
	}
	return nil
}

// holdPriors puts in unacked the values b's index and evidence keys have now, but for a key
// held already: a descriptor another observer's batch in flight sets too (the same bytes, by
// its SRI) keeps the value before both, and the first acknowledged releases it. Other keys
// are only read within a Sync or at Open, and each observer's keys are written by its one
// Sync at a time.
func (s *Store) holdPriors(b *pebble.Batch) ([]string, error) {
	s.unackedMu.Lock()
	defer s.unackedMu.Unlock()
	var keys []string
	r := b.Reader()
	for {
		kind, key, _, ok, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("reading a mirror batch: %w", err)
		}
		if !ok {
			return keys, nil
		}
		if kind != pebble.InternalKeyKindSet || !(bytes.HasPrefix(key, []byte("v/")) || bytes.HasPrefix(key, []byte("x/"))) {
			continue
		}
		keys = append(keys, string(key))
		if _, held := s.unacked[string(key)]; held {
			continue
		}
		v, closer, err := s.db.Get(key)
		switch {
		case errors.Is(err, pebble.ErrNotFound):
			s.unacked[string(key)] = prior{}
		case err != nil:
			return nil, fmt.Errorf("reading the mirror before a write: %w", err)
		default:
			s.unacked[string(key)] = prior{value: bytes.Clone(v), ok: true}
			closer.Close()
		}
	}
}
