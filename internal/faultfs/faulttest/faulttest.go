// Package faulttest plays a store's write sequence on its real Pebble database over a disk
// that fails (internal/faultfs) and checks what the store makes of each fault: the call
// that met it says so with an error carrying it, never a panic or a hang; the store stops
// and says so; every later write, the failed one tried again included, is refused at once;
// its reads still answer; and a crash copy of what was synced reopens holding every
// acknowledged write and nothing partial, and takes writes again. A store that gives a
// Fill is also played on a disk where Pebble's flushes fail (FlushFails).
package faulttest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/histor-observer/histor/internal/faultfs"
	"github.com/histor-observer/histor/internal/pebbledb"
)

// Stoppable is what every store built on pebbledb.Guard answers.
type Stoppable interface {
	// Stopped is the fatal write error that stopped the store's writes, nil while it takes them.
	Stopped() error
	Close() error
}

// Step is one call of the write sequence.
type Step[S Stoppable] struct {
	Name string
	// Writes says the call writes. One that finds nothing to write (the same record again)
	// may succeed on a stopped store; one that writes must be refused by it.
	Writes bool
	Do     func(s S) error
}

// Scenario is a store and its write sequence.
type Scenario[S Stoppable] struct {
	// Dir is the store's directory on the disk; Open opens the store in it.
	Dir string
	// Open opens the store in Dir on fsys.
	Open func(fsys vfs.FS) (S, error)
	// Steps is the write sequence; without faults each of them succeeds.
	Steps []Step[S]
	// Dump is everything a reader of the store can read and a restart keeps, as text, and
	// an error when a record it reads is not whole. The sound run's store, dumped before the
	// first step and after each, shows what each step acknowledged; after a crash the
	// reopened store's dump must be one of those. A stopped store's must not fail.
	Dump func(s S) (string, error)
	// StoppedShowsAcked demands more of a stopped store's reads than whole records: its Dump
	// is the sound run's after the steps it acknowledged, nothing of the write that failed.
	// Left false for a store whose reads drop what a failed write touched until a reopen.
	StoppedShowsAcked bool
	// Again is a write after the sequence: refused at once by a stopped store, taken by the
	// store reopened after the crash.
	Again func(s S) error
	// Fill, when set, is a write the store takes again and again, i counting from 0, each
	// one new, so that Pebble's memtable fills and is flushed: Run then plays a disk that
	// takes the WAL but no table until a flush fails (FlushFails). Filled says whether the
	// store holds fill i.
	Fill   func(s S, i int) error
	Filled func(s S, i int) (bool, error)
}

// MaxFills bounds FlushFails' writes: Pebble's memtable (4 MiB unless a store sets less)
// flushes long before.
var MaxFills = 100_000

// Bounds of the waits. A call over a failing disk that takes CallWait is taken to hang; a
// write on a stopped store must be refused within StoppedWait.
var (
	CallWait    = 20 * time.Second
	StoppedWait = time.Second
)

// Points is how many call numbers of each kind a sweep fails: every one in the short
// sequences these stores' tests play, so no write between two others goes untried.
const Points = 24

// Run plays sc once without faults, counting the disk's calls and taking a dump after each
// step, then once for each case of faultfs.Sweep, checking each as the package comment says.
func Run[S Stoppable](t *testing.T, sc Scenario[S]) {
	defer func(wait time.Duration) { pebbledb.FatalCloseWait = wait }(pebbledb.FatalCloseWait)
	pebbledb.FatalCloseWait = 200 * time.Millisecond
	counted := faultfs.NewCounter()
	mem := vfs.NewStrictMem()
	snaps := []string{}
	r := play(t, sc, mem, counted, nil, func(s S) { snaps = append(snaps, sc.dump(t, s)) })
	if r.failed != nil {
		t.Fatalf("the sequence without faults failed at step %d: %v", r.first, r.failed)
	}
	sc.verify(t, mem, snaps, r)
	if counted.Seen(faultfs.Write) == 0 || counted.Seen(faultfs.Sync) == 0 {
		t.Fatalf("the sequence wrote nothing a fault could fail: %v", counted)
	}
	stopped := 0
	for _, c := range faultfs.Sweep(counted, Points) {
		t.Run(c.Name, func(t *testing.T) {
			mem := vfs.NewStrictMem()
			r := play(t, sc, mem, c.Injector(), snaps, nil)
			if why, skip := c.Missed(); skip {
				t.Skip(why)
			} else if why != "" {
				t.Fatal(why)
			}
			if c.FullDisk() && r.failed == nil {
				t.Fatal("a full disk failed no call")
			}
			if r.failed != nil {
				stopped++
			}
			sc.verify(t, mem, snaps, r)
		})
	}
	if stopped == 0 {
		t.Fatal("no fault stopped the store: the sweep failed nothing that mattered")
	}
	t.Logf("calls in the sequence: %v; %d runs stopped the store", counted, stopped)
	if sc.Fill != nil {
		t.Run("flush fails", func(t *testing.T) { FlushFails(t, sc) })
	}
}

// FlushFails fills the store (Scenario.Fill) on a disk that takes the WAL but no table
// until Pebble's flush fails, and checks what the store makes of it: the fill then is refused
// with a *pebbledb.StoppedError for a *pebbledb.BackgroundError naming the fault, within
// StoppedWait (never a stall that does not end); the store stops and says why; every later
// write is refused at once; its reads show every fill acknowledged; it closes; and a crash
// copy of the disk reopens holding every fill acknowledged, and takes writes again.
func FlushFails[S Stoppable](t *testing.T, sc Scenario[S]) {
	defer func(wait time.Duration) { pebbledb.FatalCloseWait = wait }(pebbledb.FatalCloseWait)
	pebbledb.FatalCloseWait = 200 * time.Millisecond
	mem := vfs.NewStrictMem()
	tables := &faultfs.Matching{Suffix: ".sst", Kinds: []faultfs.Op{faultfs.Create}}
	var s S
	if err := faultfs.Within(CallWait, func() (err error) { s, err = sc.Open(faultfs.Wrap(mem, tables)); return err }); err != nil {
		t.Fatalf("opening: %v", err)
	}
	acked := 0
	var refused error
	for refused == nil {
		if acked == MaxFills {
			t.Fatalf("%d fills and no flush failed: the store's writes never reached a table", acked)
		}
		start := time.Now()
		refused = faultfs.Within(CallWait, func() error { return sc.Fill(s, acked) })
		if refused == nil {
			acked++
		} else if took := time.Since(start); took > StoppedWait {
			t.Fatalf("fill %d, at the failed flush, took %s to answer", acked, took)
		}
	}
	var se *pebbledb.StoppedError
	var be *pebbledb.BackgroundError
	if !errors.As(refused, &se) || !errors.As(refused, &be) || !faultfs.IsFault(refused) {
		t.Fatalf("fill %d: %v, want a *pebbledb.StoppedError for a failed flush naming the fault", acked, refused)
	}
	if stopped := s.Stopped(); !errors.As(stopped, &be) || !faultfs.IsFault(stopped) {
		t.Fatalf("Stopped is %v after the failed flush", stopped)
	}
	start := time.Now()
	err := faultfs.Within(CallWait, func() error { return sc.Again(s) })
	refusedAtOnce(t, "a write after the failed flush", err, time.Since(start))
	sc.holdsFills(t, s, acked, "the stopped store")
	if err := faultfs.Within(CallWait, s.Close); err != nil && !faultfs.IsFault(err) {
		t.Fatalf("closing after the failed flush: %v", err)
	}
	mem.ResetToSyncedState()
	disk := vfs.NewStrictMem()
	if _, err := vfs.Clone(mem, disk, sc.Dir, sc.Dir); err != nil {
		t.Fatalf("copying the disk: %v", err)
	}
	if err := faultfs.Within(CallWait, func() (err error) { s, err = sc.Open(disk); return err }); err != nil {
		t.Fatalf("reopening after the failed flush: %v", err)
	}
	defer s.Close()
	sc.holdsFills(t, s, acked, "the store reopened after a crash")
	if err := faultfs.Within(CallWait, func() error { return sc.Again(s) }); err != nil {
		t.Fatalf("a write on the store reopened: %v", err)
	}
	t.Logf("a flush failed after %d fills (%d table creations refused)", acked, tables.Fired())
}

// holdsFills fails the test unless s holds fills 0 to n-1.
func (sc Scenario[S]) holdsFills(t *testing.T, s S, n int, what string) {
	t.Helper()
	for i := range n {
		var ok bool
		if err := faultfs.Within(CallWait, func() (err error) { ok, err = sc.Filled(s, i); return err }); err != nil || !ok {
			t.Fatalf("%s: fill %d of the %d acknowledged: held %v, %v", what, i, n, ok, err)
		}
	}
}

// played is what a run did: the first step that failed (len(Steps) when none) and its error.
type played struct {
	first  int
	failed error
}

// play opens the store on mem through a switch, arms inj and plays the sequence, calling
// after (when set) with the store before the first step and after each. snaps, when set,
// are the sound run's dumps a stopped store's must match (Scenario.StoppedShowsAcked).
func play[S Stoppable](t *testing.T, sc Scenario[S], mem *vfs.MemFS, inj faultfs.Injector, snaps []string, after func(S)) played {
	t.Helper()
	sw := &faultfs.Switch{}
	var s S
	if err := faultfs.Within(CallWait, func() (err error) { s, err = sc.Open(faultfs.Wrap(mem, sw)); return err }); err != nil {
		t.Fatalf("opening before the fault: %v", err)
	}
	sw.Arm(inj)
	if after != nil {
		after(s)
	}
	r := played{first: len(sc.Steps)}
	for i, st := range sc.Steps {
		start := time.Now()
		err := faultfs.Within(CallWait, func() error { return st.Do(s) })
		switch {
		case r.failed == nil && err == nil:
		case r.failed == nil:
			if !faultfs.IsFault(err) {
				t.Fatalf("step %d (%s): %v, not the fault", i, st.Name, err)
			}
			r.first, r.failed = i, err
			if st.Writes {
				// A caller retries what failed: the store must refuse it too, never take it as done
				// (a write whose sync failed is visible to Pebble's reads, but not durable).
				start = time.Now()
				err = faultfs.Within(CallWait, func() error { return st.Do(s) })
				refusedAtOnce(t, st.Name+", tried again", err, time.Since(start))
			}
		case st.Writes || err != nil:
			refusedAtOnce(t, st.Name, err, time.Since(start))
		}
		if after != nil {
			after(s)
		}
	}
	sc.stoppedSaysSo(t, s, r)
	if r.failed != nil {
		// Reads go on: a stopped store still answers them, each record whole (Dump's checks).
		var got string
		if err := faultfs.Within(CallWait, func() (err error) { got, err = sc.Dump(s); return err }); err != nil {
			t.Fatalf("reading the stopped store: %v", err)
		}
		if sc.StoppedShowsAcked && snaps != nil && got != snaps[r.first] {
			t.Fatalf("the store stopped at step %d (%s) shows what was not acknowledged; against the store after the steps before it:\n%s",
				r.first, sc.Steps[r.first].Name, lineDiff(snaps[r.first], got))
		}
	}
	if err := faultfs.Within(CallWait, s.Close); err != nil && !faultfs.IsFault(err) {
		t.Fatalf("closing after the fault: %v", err)
	}
	sw.Arm(nil)
	return r
}

// refusedAtOnce checks a write on a stopped store: a *pebbledb.StoppedError naming the
// fault, answered within StoppedWait.
func refusedAtOnce(t *testing.T, name string, err error, took time.Duration) {
	t.Helper()
	var se *pebbledb.StoppedError
	if !errors.As(err, &se) || !faultfs.IsFault(err) {
		t.Fatalf("%s on a stopped store: %v, want a *pebbledb.StoppedError naming the fault", name, err)
	}
	if took > StoppedWait {
		t.Fatalf("%s on a stopped store took %s to be refused", name, took)
	}
}

// stoppedSaysSo: Stopped names the first failure's fault, or is nil when none failed; a
// stopped store refuses one more write at once.
func (sc Scenario[S]) stoppedSaysSo(t *testing.T, s S, r played) {
	t.Helper()
	stopped := s.Stopped()
	if (stopped != nil) != (r.failed != nil) || (stopped != nil && !faultfs.IsFault(stopped)) {
		t.Fatalf("Stopped is %v after the first failure %v", stopped, r.failed)
	}
	if stopped != nil {
		start := time.Now()
		err := faultfs.Within(CallWait, func() error { return sc.Again(s) })
		refusedAtOnce(t, "a write after the sequence", err, time.Since(start))
	}
}

// verify crashes mem (unsynced writes lost) and reopens a copy of what was synced, as a
// restarted process would (a store stopped by a fatal error may still hold its lock in
// this one): its dump is the sound run's after the steps acknowledged, or after the one
// that failed too, never anything between; and it takes a write again.
func (sc Scenario[S]) verify(t *testing.T, mem *vfs.MemFS, snaps []string, r played) {
	t.Helper()
	mem.ResetToSyncedState()
	got := sc.reopen(t, mem)
	if got == snaps[r.first] || (r.first < len(sc.Steps) && got == snaps[r.first+1]) {
		return
	}
	for i, snap := range snaps {
		if got == snap {
			t.Fatalf("reopened after the crash holding the store as after step %d; %d steps were acknowledged (failed: %v)", i, r.first, r.failed)
		}
	}
	t.Fatalf("reopened after the crash holding what no step left (%d acknowledged, failed: %v); against the store after them:\n%s",
		r.first, r.failed, lineDiff(snaps[r.first], got))
}

// lineDiff lists the lines only want holds (-) and those only got holds (+).
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

// reopen opens a copy of mem's store, dumps it and has it take a write.
func (sc Scenario[S]) reopen(t *testing.T, mem *vfs.MemFS) string {
	t.Helper()
	disk := vfs.NewStrictMem()
	if _, err := vfs.Clone(mem, disk, sc.Dir, sc.Dir); err != nil {
		t.Fatalf("copying the disk: %v", err)
	}
	var s S
	if err := faultfs.Within(CallWait, func() (err error) { s, err = sc.Open(disk); return err }); err != nil {
		t.Fatalf("reopening after the crash: %v", err)
	}
	defer s.Close()
	dump := sc.dump(t, s)
	if err := faultfs.Within(CallWait, func() error { return sc.Again(s) }); err != nil {
		t.Fatalf("writing after reopening: %v", err)
	}
	return dump
}

// dump is sc.Dump, bounded.
func (sc Scenario[S]) dump(t *testing.T, s S) string {
	t.Helper()
	var dump string
	if err := faultfs.Within(CallWait, func() (err error) { dump, err = sc.Dump(s); return err }); err != nil {
		t.Fatalf("reading the store: %v", err)
	}
	return dump
}
