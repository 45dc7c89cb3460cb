package state

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cockroachdb/pebble"
)

// prefixChangeID maps a change id to its key under prefixChange.
const prefixChangeID = "ci/"

// Update is everything one target's processing changes, written as one synced
// batch so a crash never leaves a target's record and its observation apart.
type Update struct {
	Target      *Target
	Observation *Observation
	Change      *Change // its Seq is assigned by CommitAll
	Span        *Span   // the target's open timeline span, as it now stands
	Labels      []LabelRef
	// PackageRun, when set, is the run of a package version whose labels
	// this update commits: written in the same batch, so the state never
	// holds the labels' observation without the run (or the other way).
	// Never an infrastructure status's run (PutPackageRun keeps those).
	PackageRun *PackageRun
}

// Commit writes u in one synced batch.
func (s *Store) Commit(u Update) error { return s.CommitAll([]Update{u}) }

// CommitAll writes several targets' updates in one synced batch: the crawl
// commits the targets of one log append together, after the append is durable.
//
// Each change gets the next sequence number (HISTOR's integer change id);
// the caller's Change is updated with it once the batch is durable.
func (s *Store) CommitAll(us []Update) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	seqs, err := s.assignSeqs(b, us)
	if err != nil {
		return err
	}
	for i, u := range us {
		if err := addUpdate(b, u, seqs[i]); err != nil {
			return err
		}
	}
	if err := s.view.Commit(b); err != nil {
		return fmt.Errorf("writing crawl state: %w", err)
	}
	for i, u := range us {
		if u.Change != nil {
			u.Change.Seq = seqs[i]
		}
	}
	return nil
}

// assignSeqs gives each new change in us the next sequence number; a change
// already stored (the same change committed again) keeps its own.
func (s *Store) assignSeqs(b *pebble.Batch, us []Update) ([]int64, error) {
	seqs := make([]int64, len(us))
	n := 0
	for i, u := range us {
		if u.Change == nil {
			continue
		}
		old, err := s.Change(u.Change.ID)
		switch {
		case err == nil && old.Seq > 0:
			seqs[i] = old.Seq
		case err == nil || errors.Is(err, ErrNotFound):
			n++
			seqs[i] = -int64(n)
		default:
			return nil, err
		}
	}
	first, err := s.nextSeqs(b, n)
	if err != nil {
		return nil, err
	}
	for i := range seqs {
		if seqs[i] < 0 {
			seqs[i] = first - seqs[i] - 1
		}
	}
	return seqs, nil
}

func addUpdate(b *pebble.Batch, u Update, seq int64) error {
	if u.Target != nil {
		if err := setJSON(b, prefixTarget+u.Target.ID, u.Target); err != nil {
			return err
		}
	}
	if u.Observation != nil {
		if err := setJSON(b, prefixObs+u.Observation.TargetID, u.Observation); err != nil {
			return err
		}
	}
	if err := addHistory(b, u); err != nil {
		return err
	}
	if u.PackageRun != nil {
		if u.PackageRun.Status.Infrastructure() {
			return fmt.Errorf("committing package run of %s: status %s is not a package's", u.PackageRun.TargetID, u.PackageRun.Status)
		}
		if err := addPackageRun(b, *u.PackageRun, true); err != nil {
			return err
		}
	}
	if u.Change != nil {
		return putChange(b, u.Change, seq)
	}
	return nil
}

// PutTargets writes many targets in one synced batch (a harvest's result, or
// the delisted ones).
func (s *Store) PutTargets(ts []Target) error {
	b := s.db.NewBatch()
	defer b.Close()
	for i := range ts {
		if err := setJSON(b, prefixTarget+ts[i].ID, &ts[i]); err != nil {
			return err
		}
	}
	if err := s.view.Commit(b); err != nil {
		return fmt.Errorf("writing targets: %w", err)
	}
	return nil
}

func putChange(b *pebble.Batch, c *Change, seq int64) error {
	if c.ID == "" || c.TargetID == "" {
		return errors.New("storing change: id and target id are required")
	}
	key := changeKey(c.At, c.ID)
	stored := *c
	stored.Seq = seq
	if err := setJSON(b, key, &stored); err != nil {
		return err
	}
	if err := b.Set([]byte(seqKey(seq)), []byte(key), nil); err != nil {
		return err
	}
	return b.Set([]byte(prefixChangeID+c.ID), []byte(key), nil)
}

// changeKey orders changes newest first: the time is inverted so Pebble's
// ascending iteration yields the latest change first.
func changeKey(at time.Time, id string) string {
	return prefixChange + invertedTime(at) + "/" + id
}

func invertedTime(t time.Time) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(math.MaxInt64-t.UnixNano()))
	return hex.EncodeToString(b[:])
}

func setJSON(b *pebble.Batch, key string, v any) error {
	val, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", key, err)
	}
	return b.Set([]byte(key), val, nil)
}

// read calls fn with a reader of what the acknowledged commits wrote (see Store.view).
func (s *Store) read(fn func(pebble.Reader) error) error { return s.view.Read(fn) }

func (s *Store) getJSON(key string, v any) error {
	return s.read(func(r pebble.Reader) error { return getJSONIn(r, key, v) })
}

func getJSONIn(r pebble.Reader, key string, v any) error {
	val, closer, err := r.Get([]byte(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", key, err)
	}
	defer closer.Close()
	if err := json.Unmarshal(val, v); err != nil {
		return fmt.Errorf("decoding %s: %w", key, err)
	}
	return nil
}

// Target returns the target with id.
func (s *Store) Target(id string) (*Target, error) {
	var t Target
	if err := s.getJSON(prefixTarget+id, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Targets returns every target ever harvested, delisted ones included, in id order.
func (s *Store) Targets() ([]Target, error) {
	return listJSON[Target](s, prefixTarget, 0, "target")
}

// Observation returns the latest observation of target id.
func (s *Store) Observation(id string) (*Observation, error) {
	var o Observation
	if err := s.getJSON(prefixObs+id, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// Observations returns the latest observation of every target, in target id order.
func (s *Store) Observations() ([]Observation, error) {
	return listJSON[Observation](s, prefixObs, 0, "observation")
}

// Change returns the change record with id.
func (s *Store) Change(id string) (*Change, error) {
	return s.changeAt(prefixChangeID+id, "change "+id)
}

// changeAt reads the change whose key the index entry index holds.
func (s *Store) changeAt(index, what string) (*Change, error) {
	var c Change
	err := s.read(func(r pebble.Reader) error {
		val, closer, err := r.Get([]byte(index))
		if errors.Is(err, pebble.ErrNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", what, err)
		}
		key := string(val)
		closer.Close()
		return getJSONIn(r, key, &c)
	})
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// listJSON decodes each value under prefix as a T, in key order, at most
// limit of them when limit > 0; what names a T in errors.
func listJSON[T any](s *Store, prefix string, limit int, what string) ([]T, error) {
	var out []T
	err := s.scan(prefix, limit, func(val []byte) error {
		var v T
		if err := json.Unmarshal(val, &v); err != nil {
			return fmt.Errorf("decoding %s: %w", what, err)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// Changes returns up to limit change records, newest first (limit ≤ 0: all).
func (s *Store) Changes(limit int) ([]Change, error) {
	return listJSON[Change](s, prefixChange, limit, "change")
}

// PatternSet returns the digest of the pattern set the last scan labels used, "" if none.
func (s *Store) PatternSet() (string, error) {
	var d string
	err := s.getJSON(keyPatternSet, &d)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	return d, err
}

// SetPatternSet records the digest of the pattern set now in use.
func (s *Store) SetPatternSet(digest string) error {
	return s.put(keyPatternSet, digest)
}

// AddRun records a finished crawl.
func (s *Store) AddRun(r Run) error {
	return s.put(prefixRun+invertedTime(r.Started), r)
}

// Runs returns up to limit crawl runs, newest first (limit ≤ 0: all).
func (s *Store) Runs(limit int) ([]Run, error) {
	return listJSON[Run](s, prefixRun, limit, "run")
}

func (s *Store) put(key string, v any) error {
	if err := s.view.Write(func(b *pebble.Batch) error { return setJSON(b, key, v) }); err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	return nil
}

// scan calls fn with each value under prefix in key order, at most limit
// values when limit > 0. fn must not read the store again (it runs within a read).
func (s *Store) scan(prefix string, limit int, fn func(val []byte) error) error {
	upper := []byte(prefix)
	upper[len(upper)-1]++
	return s.read(func(r pebble.Reader) error {
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte(prefix), UpperBound: upper})
		if err != nil {
			return fmt.Errorf("listing %s: %w", prefix, err)
		}
		defer it.Close()
		n := 0
		for ok := it.First(); ok && (limit <= 0 || n < limit); ok = it.Next() {
			if err := fn(it.Value()); err != nil {
				return err
			}
			n++
		}
		if err := it.Error(); err != nil {
			return fmt.Errorf("listing %s: %w", prefix, err)
		}
		return nil
	})
}
