package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/internal/faultfs"
	"github.com/histor-observer/histor/internal/faultfs/faulttest"
	"github.com/histor-observer/histor/internal/pebbledb"
	"github.com/histor-observer/histor/sandbox"
)

// TestPebbleFaults commits two crawls' records and history on the crawl state's real Pebble
// over a disk that fails: each write, sync, create, rename, remove and close after Open in
// turn, once and from then on, and a disk that fills (faulttest.Run). After each: the
// commit that met the fault fails with it, the store stops (Stopped) and refuses later
// writes at once, its reads show exactly what was acknowledged, and after a crash it reopens with every acknowledged commit whole (each
// target's record with its observation, span and labels, each change with its sequence
// number, none skipped) and commits again at the next sequence number.
func TestPebbleFaults(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	ids := []string{"00112233aabbccdd", "1111222233334444", "aaaabbbbccccdddd"}
	targets := make([]Target, len(ids))
	for i, id := range ids {
		targets[i] = Target{Target: registry.Target{ID: id, Name: fmt.Sprintf("io.example/s%d", i), Endpoint: fmt.Sprintf("https://s%d.example/mcp", i)}}
	}
	// observed is target i's update after an attempt at hour h that ended with status and,
	// when ok, tool-set digest d, with a label at leaf.
	observed := func(i, h int, status, d string, leaf uint64) Update {
		when := at.Add(time.Duration(h) * time.Hour)
		tg := targets[i]
		tg.Status, tg.LastCrawled = status, when
		u := Update{Target: &tg,
			Observation: &Observation{TargetID: tg.ID, Status: status, ObservedAt: when, ToolSetDigest: d, Attempts: h + 1},
			Span:        &Span{TargetID: tg.ID, From: at, Until: when, Count: h + 1, Status: status, ToolSetDigest: d}}
		if status == "ok" {
			id := fmt.Sprintf("urn:uuid:%s-%d", tg.ID, leaf)
			u.Observation.Labels = map[string]string{"urn:awr:mtl:1:method:observation": id}
			u.Observation.Anchor = &Anchor{LabelID: id, ObservedAt: when, ToolSetDigest: d}
			u.Labels = []LabelRef{{TargetID: tg.ID, ID: id, Method: "urn:awr:mtl:1:method:observation", Verdict: "pass",
				Subject: "sha256-s" + d, ObservedAt: when, IssuedAt: when, Digest: "sha256-l" + id, LeafIndex: leaf}}
		}
		return u
	}
	changed := func(u Update, id, before string) Update {
		u.Change = &Change{ID: id, TargetID: u.Target.ID, Name: u.Target.Name, Endpoint: u.Target.Endpoint,
			Before: before, After: u.Observation.ToolSetDigest, At: u.Observation.ObservedAt, Summary: json.RawMessage(`{"added":["x"]}`)}
		return u
	}
	commit := func(name string, us ...Update) faulttest.Step[*Store] {
		return faulttest.Step[*Store]{Name: name, Writes: true, Do: func(s *Store) error { return s.CommitAll(us) }}
	}
	write := func(name string, do func(s *Store) error) faulttest.Step[*Store] {
		return faulttest.Step[*Store]{Name: name, Writes: true, Do: do}
	}
	c1 := changed(observed(0, 1, "ok", "sha256-b", 4), "change-1", "sha256-a")
	faulttest.Run(t, faulttest.Scenario[*Store]{
		Dir:  "state",
		Open: func(fsys vfs.FS) (*Store, error) { return OpenFS(fsys, "state", nil) },
		Steps: []faulttest.Step[*Store]{
			write("harvest", func(s *Store) error { return s.PutTargets(targets) }),
			write("pattern set", func(s *Store) error { return s.SetPatternSet("sha256-p1") }),
			commit("first crawl", observed(0, 0, "ok", "sha256-a", 1), observed(1, 0, "ok", "sha256-c", 2), observed(2, 0, "timeout", "", 0)),
			write("client report", func(s *Store) error { return s.AddClientReport(ids[0], "sha256-a", "2026-11-01") }),
			write("client report again", func(s *Store) error { return s.AddClientReport(ids[0], "sha256-a", "2026-11-01") }),
			commit("a change", c1),
			write("package run", func(s *Store) error {
				return s.PutPackageRun(PackageRun{TargetID: ids[2], Package: "npm:x@1.0.0", Version: "1.0.0", Status: sandbox.StatusOK, ObservedAt: at})
			}),
			write("run", func(s *Store) error {
				return s.AddRun(Run{Started: at, Ended: at.Add(time.Hour), Targets: 3, Labels: 3, Changes: 1, Complete: true})
			}),
			commit("second crawl", changed(observed(1, 2, "ok", "sha256-d", 5), "change-2", "sha256-c"), observed(2, 2, "ok", "sha256-e", 6)),
			commit("the change again", c1),
			// The prune writes only when it finds reports to delete: after a fault that came before
			// them, it succeeds on a stopped store.
			{Name: "prune", Do: func(s *Store) error { _, err := s.PruneClientReports("2026-11-02"); return err }},
			write("run", func(s *Store) error { return s.AddRun(Run{Started: at.Add(2 * time.Hour), Targets: 3, Changes: 1}) }),
		},
		Dump:              func(s *Store) (string, error) { return dumpState(s, ids) },
		StoppedShowsAcked: true,
		Again: func(s *Store) error {
			n := 0
			for seq := int64(1); ; seq++ {
				if _, err := s.ChangeBySeq(seq); err != nil {
					break
				}
				n++
			}
			c := changed(observed(0, 3, "ok", "sha256-f", 7), "change-3", "sha256-b")
			if err := s.Commit(c); err != nil {
				return err
			}
			if c.Change.Seq != int64(n+1) {
				return fmt.Errorf("a change committed after %d took sequence number %d", n, c.Change.Seq)
			}
			return nil
		},
		// The flush case's fills are crawls of targets of their own, one committed at a time.
		Fill: func(s *Store, i int) error { return s.Commit(filled(i)) },
		Filled: func(s *Store, i int) (bool, error) {
			want := filled(i)
			o, err := s.Observation(want.Target.ID)
			return err == nil && o != nil && o.ToolSetDigest == want.Observation.ToolSetDigest, err
		},
	})
}

// filled is the crawl of target i of the flush case's fills.
func filled(i int) Update {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	tg := Target{Target: registry.Target{ID: fmt.Sprintf("f%015x", i), Name: fmt.Sprintf("io.example/fill-%d", i),
		Endpoint: fmt.Sprintf("https://fill-%d.example/mcp", i)}, Status: "ok", LastCrawled: at}
	d := fmt.Sprintf("sha256-fill%d", i)
	return Update{Target: &tg,
		Observation: &Observation{TargetID: tg.ID, Status: "ok", ObservedAt: at, ToolSetDigest: d, Attempts: 1},
		Span:        &Span{TargetID: tg.ID, From: at, Until: at, Count: 1, Status: "ok", ToolSetDigest: d}}
}

// dumpState is everything the crawl state's readers read of ids, a line a record: targets,
// observations, spans, labels and their targets, changes by time and by sequence number
// (1, 2, … none skipped), runs, the pattern set, client reports and package runs.
func dumpState(s *Store, ids []string) (string, error) {
	d := &dump{}
	list(d, "target", s.Targets)
	list(d, "observation", s.Observations)
	for _, id := range ids {
		list(d, "span", func() ([]Span, error) { return s.Spans(id) })
		labels := list(d, "label", func() ([]LabelRef, error) { return s.Labels(id) })
		for _, l := range labels {
			list(d, "label target", func() ([]string, error) { tid, err := s.LabelTarget(l.ID); return []string{tid}, err })
		}
		list(d, "client report", func() ([]ClientReport, error) { return s.ClientReports(id, "") })
		list(d, "package version", func() ([]PackageRun, error) { return s.PackageVersions(id, 0) })
	}
	list(d, "change", func() ([]Change, error) { return s.Changes(0) })
	bySeq := list(d, "change by seq", func() ([]Change, error) { return s.ChangesBefore(0, 0) })
	for i, c := range bySeq {
		if want := int64(len(bySeq) - i); c.Seq != want && d.err == nil {
			d.err = fmt.Errorf("change %s holds sequence number %d, want %d", c.ID, c.Seq, want)
		}
	}
	list(d, "run", func() ([]Run, error) { return s.Runs(0) })
	list(d, "pattern set", func() ([]string, error) { ps, err := s.PatternSet(); return []string{ps}, err })
	list(d, "package run", s.PackageRuns)
	return d.b.String(), d.err
}

// dump is a store's records as text, and the first error met reading them.
type dump struct {
	b   strings.Builder
	err error
}

// list reads records with read and writes one line each to d.
func list[T any](d *dump, what string, read func() ([]T, error)) []T {
	vs, err := read()
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("reading %s: %w", what, err)
	}
	for _, v := range vs {
		j, err := json.Marshal(v)
		if err != nil && d.err == nil {
			d.err = err
		}
		fmt.Fprintf(&d.b, "%s %s\n", what, j)
	}
	return vs
}

// TestChangesAfterFailedSync: a commit whose WAL sync failed is visible to Pebble's reads but
// not durable, and a restart gives its sequence numbers to other changes. No read by number
// or by time may show its change: the event deriver would sign an event for a change that
// then never was, and skip the change that takes its number.
func TestChangesAfterFailedSync(t *testing.T) {
	defer func(wait time.Duration) { pebbledb.FatalCloseWait = wait }(pebbledb.FatalCloseWait)
	pebbledb.FatalCloseWait = 200 * time.Millisecond
	sw := &faultfs.Switch{}
	s, err := OpenFS(faultfs.Wrap(vfs.NewStrictMem(), sw), "state", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	change := func(id string, h int) Update {
		return Update{Change: &Change{ID: id, TargetID: "t1", At: at.Add(time.Duration(h) * time.Hour), Summary: json.RawMessage(`{}`)}}
	}
	if err := s.Commit(change("c1", 0)); err != nil {
		t.Fatal(err)
	}
	sw.Arm(&faultfs.Plan{Kinds: []faultfs.Op{faultfs.Sync}, At: 1})
	if err := s.Commit(change("c2", 1)); !faultfs.IsFault(err) {
		t.Fatalf("a commit whose sync failed: %v", err)
	}
	byTime, err := s.Changes(0)
	if err != nil {
		t.Fatal(err)
	}
	bySeq, err := s.ChangesBefore(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.ChangesBefore(3, 0)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := s.ChangeBySeq(2)
	if !errors.Is(err, ErrNotFound) || len(byTime) != 1 || len(bySeq) != 1 || len(before) != 1 {
		t.Fatalf("a stopped store shows the change whose commit failed: by number %+v (%v), %d by time, %d and %d by number",
			c2, err, len(byTime), len(bySeq), len(before))
	}
	if c, err := s.ChangeBySeq(1); err != nil || c.ID != "c1" {
		t.Fatalf("the change acknowledged: %+v, %v", c, err)
	}
}
