package catalog

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/histor-observer/histor/crawl/state"
)

// Update builds the next snapshot from the current one after a commit that
// wrote the targets ids (a crawl's or a package run's Summary.Committed): it
// reads those targets again, and the targets of every change committed
// since, from the store; every other server is kept as it was, with what its
// Memo holds. The lists, counts and hosts are built again in memory. The
// result is the snapshot Reload would load from the same store, at the cost
// of the targets read rather than the whole store; when they are more than
// one in rereadScan of all, one scan of the store costs less than reading
// each, and the snapshot is read whole (the client reports, which only
// AddClientReport writes, are kept). On error the current snapshot stays.
func (c *Catalog) Update(ids []string) error {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	s, err := c.update(c.current(), ids)
	if err != nil {
		return fmt.Errorf("updating catalog: %w", err)
	}
	c.snap.Store(s)
	return nil
}

func (c *Catalog) update(old *snapshot, ids []string) (*snapshot, error) {
	st := c.opt.Store
	// The changes first: a target changed after this read is read again by
	// the next Update, which finds its change after maxSeq.
	fresh, err := changesAfter(st, old.maxSeq)
	if err != nil {
		return nil, err
	}
	reread := map[string]bool{}
	for _, id := range ids {
		reread[id] = true
	}
	for _, ch := range fresh {
		reread[ch.TargetID] = true
	}
	if len(reread)*rereadScan > len(old.byID) {
		return c.loadSnapshot()
	}
	s := &snapshot{byID: maps.Clone(old.byID), maxSeq: old.maxSeq, loadedAt: c.opt.Now()}
	for id := range reread {
		sv, err := readServer(st, id)
		if err != nil {
			return nil, err
		}
		if sv == nil {
			delete(s.byID, id)
			continue
		}
		if prev := old.byID[id]; prev != nil {
			sv.changeSeqs = slices.Clone(prev.changeSeqs)
		}
		s.byID[id] = sv
	}
	s.changeTimes = slices.Clone(old.changeTimes)
	for _, ch := range fresh {
		s.changeTimes = append(s.changeTimes, ch.At)
		s.maxSeq = max(s.maxSeq, ch.Seq)
		if sv := s.byID[ch.TargetID]; sv != nil {
			sv.changeSeqs = append(sv.changeSeqs, ch.Seq)
		}
	}
	slices.SortFunc(s.changeTimes, func(a, b time.Time) int { return a.Compare(b) })
	for id := range reread {
		if sv := s.byID[id]; sv != nil {
			slices.SortFunc(sv.changeSeqs, func(a, b int64) int { return cmp.Compare(b, a) })
			sv.ChangeCount = max(sv.Obs.Changes, len(sv.changeSeqs))
		}
	}
	s.servers = slices.SortedFunc(maps.Values(s.byID), func(a, b *Server) int { return strings.Compare(a.ID, b.ID) })
	s.index()
	if err := s.loadRuns(st); err != nil {
		return nil, err
	}
	return s, nil
}

// rereadScan: beyond one target in rereadScan, Update scans the store
// rather than read each target (measured by BenchmarkUpdate20k: reading
// every target one by one costs about twice a scan).
const rereadScan = 8

// readServer reads target id and its observation; nil when the store has no
// such target.
func readServer(st *state.Store, id string) (*Server, error) {
	t, err := st.Target(id)
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sv := &Server{Target: *t}
	o, err := st.Observation(id)
	switch {
	case err == nil:
		sv.Obs, sv.Observed = *o, true
	case !errors.Is(err, state.ErrNotFound):
		return nil, err
	}
	return sv, nil
}

// changesPage is how many changes one read of changesAfter takes.
const changesPage = 256

// changesAfter is every change with an id above seq, newest first.
func changesAfter(st *state.Store, seq int64) ([]state.Change, error) {
	var out []state.Change
	before := int64(0) // from the newest
	for {
		page, err := st.ChangesBefore(before, changesPage)
		if err != nil {
			return nil, err
		}
		for _, ch := range page {
			if ch.Seq <= seq {
				return out, nil
			}
			out = append(out, ch)
		}
		if len(page) < changesPage {
			return out, nil
		}
		before = page[len(page)-1].Seq
	}
}
