package mirror

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/log/format"
)

// maxPendingRetries bounds the observations waiting for their descriptor that one Sync tries
// again.
const maxPendingRetries = 256

// commit writes a checked window in one synced batch: its entries past the mirror's size,
// their stored hashes, the observations read out of them, the descriptors fetched for them
// and the new size (and, once the whole tree is held, the checkpoint as done).
func (s *Store) commit(y *syncer, m meta, raw []byte, cp format.Checkpoint, window []bundle) (uint64, []Observation, error) {
	b := s.db.NewIndexedBatch()
	defer b.Close()
	hashes := &localHashes{db: b, did: y.l.did}
	var labels []*labelObs
	added := uint64(0)
	for _, bd := range window {
		for i, e := range bd.entries {
			n := bd.start() + uint64(i)
			if n < m.Size {
				continue
			}
			if err := s.putEntry(b, hashes, y.l.did, n, e, bd.leaves[i]); err != nil {
				return 0, nil, err
			}
			added++
			lo, err := readLabel(y.l.did, n, e)
			if err != nil {
				s.metrics.unreadable.Inc()
				s.cfg.Logger.Debug("mirrored entry is no readable observation label", "observer", y.l.did, "err", err)
				continue
			}
			if lo != nil {
				labels = append(labels, lo)
			}
		}
	}
	obs, err := y.index(b, labels)
	if err != nil {
		return 0, nil, err
	}
	m.Size += added
	if m.Size == cp.Size {
		m.Done, m.done = raw, cp
	}
	if err := s.putMeta(y.l, m, b); err != nil {
		return 0, nil, err
	}
	if err := s.commitBatch(b); err != nil {
		return 0, nil, fmt.Errorf("writing the mirror of %s: %w", y.l.did, err)
	}
	if err := y.l.setMeta(m); err != nil {
		return 0, nil, err
	}
	s.tell(obs)
	return added, obs, nil
}

func (s *Store) putEntry(b *pebble.Batch, hashes *localHashes, did string, n uint64, e []byte, leaf tlog.Hash) error {
	if err := b.Set(entryKey(did, n), e, nil); err != nil {
		return err
	}
	hs, err := tlog.StoredHashesForRecordHash(int64(n), leaf, hashes)
	if err != nil {
		return fmt.Errorf("hashing mirrored entry %d of %s: %w", n, did, err)
	}
	base := tlog.StoredHashIndex(0, int64(n))
	for j, h := range hs {
		if err := b.Set(hashKey(did, base+int64(j)), h[:], nil); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) tell(obs []Observation) {
	if s.cfg.OnObservation == nil {
		return
	}
	for _, o := range obs {
		s.cfg.OnObservation(o)
	}
}

// index completes labels with their descriptors, fetched Fetchers at a time, and writes into
// b each that is newer, in log order, than the observation the index holds of its server. A
// label whose descriptor no source gave waits as pending for a later Sync.
func (y *syncer) index(b *pebble.Batch, labels []*labelObs) ([]Observation, error) {
	descs, err := y.descriptors(labels)
	if err != nil {
		return nil, err
	}
	var out []Observation
	for _, lo := range labels {
		body, ok := descs[lo.Subject]
		if !ok {
			v, _ := json.Marshal(lo)
			if err := b.Set(pendingKey(y.l.did, lo.LeafIndex), v, nil); err != nil {
				return nil, err
			}
			y.s.metrics.pending.Inc()
			continue
		}
		if err := b.Set(evidenceKey(lo.Subject), body, nil); err != nil {
			return nil, err
		}
		o, err := lo.withDescriptor(body)
		if err != nil {
			y.s.metrics.unreadable.Inc()
			y.s.cfg.Logger.Debug("mirrored observation label does not match its descriptor", "observer", y.l.did, "err", err)
			continue
		}
		newer, err := newerInIndex(b, o)
		if err != nil {
			return nil, err
		}
		if !newer {
			continue
		}
		v, _ := json.Marshal(o)
		if err := b.Set(viewKey(o.Observer, o.Server), v, nil); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// newerInIndex says whether o comes later in its observer's log than the indexed
// observation of its server.
func newerInIndex(r pebble.Reader, o Observation) (bool, error) {
	v, closer, err := r.Get(viewKey(o.Observer, o.Server))
	if errors.Is(err, pebble.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer closer.Close()
	var kept Observation
	if err := json.Unmarshal(v, &kept); err != nil {
		return true, nil // an unreadable record is replaced
	}
	return o.LeafIndex > kept.LeafIndex, nil
}

// descriptors fetches the descriptors labels name, Fetchers at a time; one that no source
// gave is left out (a source that served a wrong body is refused).
func (y *syncer) descriptors(labels []*labelObs) (map[string][]byte, error) {
	want := map[string]bool{}
	for _, lo := range labels {
		want[lo.Subject] = true
	}
	out := make(map[string][]byte, len(want))
	var mu sync.Mutex
	var refused error
	sem := make(chan struct{}, y.s.cfg.Fetchers*2)
	var wg sync.WaitGroup
	for sri := range want {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			body, err := y.descriptorFor(sri)
			mu.Lock()
			defer mu.Unlock()
			var se *SourceError
			switch {
			case errors.As(err, &se):
				refused = err
			case err == nil:
				out[sri] = body
			}
		}()
	}
	wg.Wait()
	return out, refused
}

// retryPending tries again the descriptors of observations that wait for one, a bounded
// number per Sync, from this Sync's source.
func (y *syncer) retryPending() {
	prefix := []byte("p/" + y.l.did + "/")
	it, err := y.s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: append(append([]byte(nil), prefix[:len(prefix)-1]...), '0')})
	if err != nil {
		return
	}
	var labels []*labelObs
	for it.First(); it.Valid() && len(labels) < maxPendingRetries; it.Next() {
		var lo labelObs
		if json.Unmarshal(it.Value(), &lo) == nil {
			labels = append(labels, &lo)
		}
	}
	it.Close()
	if len(labels) == 0 {
		return
	}
	descs, _ := y.descriptors(labels)
	var ready []*labelObs
	for _, lo := range labels {
		if descs[lo.Subject] != nil {
			ready = append(ready, lo)
		}
	}
	if len(ready) == 0 {
		return
	}
	b := y.s.db.NewIndexedBatch()
	defer b.Close()
	for _, lo := range ready {
		b.Delete(pendingKey(y.l.did, lo.LeafIndex), nil)
	}
	obs, err := y.index(b, ready)
	if err == nil {
		err = y.s.commitBatch(b)
	}
	if err != nil {
		y.s.cfg.Logger.Warn("indexing mirrored observations that waited for their descriptor", "observer", y.l.did, "err", err)
		return
	}
	y.s.tell(obs)
}

// EachObservation calls fn with every indexed observation of did, by server id, as the
// batches acknowledged left them (see read). Index records are never deleted, so a key
// unacked holds is either Pebble's too or had no value.
func (s *Store) EachObservation(did string, fn func(Observation)) error {
	prefix := []byte("v/" + did + "/")
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: append(append([]byte(nil), prefix[:len(prefix)-1]...), '0')})
	if err != nil {
		return fmt.Errorf("reading the mirror index of %s: %w", did, err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		v := it.Value()
		if p, held := s.priorOf(it.Key()); held && !p.ok {
			continue
		} else if held {
			v = p.value
		}
		var o Observation
		if err := json.Unmarshal(v, &o); err != nil {
			s.cfg.Logger.Warn("skipping an unreadable mirror index record", "key", string(it.Key()), "err", err)
			continue
		}
		fn(o)
	}
	return it.Error()
}
