package mirror_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"filippo.io/torchwood"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/internal/faultfs"
	"github.com/histor-observer/histor/internal/faultfs/faulttest"
	"github.com/histor-observer/histor/internal/pebbledb"
	"github.com/histor-observer/histor/internal/promset/promtest"
	"github.com/histor-observer/histor/node/mirror"
)

// TestPebbleFaults syncs a mirror over a disk that fails: each write, sync, create, rename,
// remove and close after Open in turn, once and from then on, and a disk that fills. After
// each: a sync that met the fault says so with an error carrying it (no panic escapes), a
// store whose commit pipeline met it stops and says so (Stopped, histor_mirror_stopped); and
// after a crash that loses what was not synced the mirror reopens holding whole bundles only,
// no fewer entries than a sync reported done, no checkpoint over a tree it does not hold
// whole, and one more sync brings it to the whole log with every observation.
func TestPebbleFaults(t *testing.T) {
	o := newObserver(t, "eta")
	for i := range 6 {
		o.observe("com.example/f"+string(rune('a'+i)), "https://f.example/mcp", "x", 120)
	}
	size := o.log.Latest().Size
	src := &logSource{"honest", o.log}

	// run opens a mirror on mem, arms inj, syncs and reports what the sync said it holds.
	defer func(wait time.Duration) { pebbledb.FatalCloseWait = wait }(pebbledb.FatalCloseWait)
	pebbledb.FatalCloseWait = 200 * time.Millisecond
	run := func(t *testing.T, mem *vfs.MemFS, inj faultfs.Injector) (held uint64, stopped, err error) {
		t.Helper()
		sw := &faultfs.Switch{}
		reg := prometheus.NewRegistry()
		told := map[string]mirror.Observation{}
		s, err := mirror.Open(mirror.Config{Dir: "m", FS: faultfs.Wrap(mem, sw), BundlesPerBatch: 1, Registerer: reg,
			OnObservation: func(ob mirror.Observation) { told[ob.Server] = ob }})
		if err != nil {
			t.Fatalf("opening before the fault: %v", err)
		}
		if err := s.Follow(o.did, ""); err != nil {
			t.Fatalf("following before the fault: %v", err)
		}
		sw.Arm(inj)
		res, err := s.Sync(context.Background(), o.did, src)
		if err != nil && !faultfs.IsFault(err) {
			t.Fatalf("a sync over a failing disk: %v, not the fault", err)
		}
		if stopped := s.Stopped(); stopped != nil && !faultfs.IsFault(stopped) {
			t.Fatalf("Stopped is %v, not the fault", stopped)
		}
		if want := map[bool]float64{false: 0, true: 1}[s.Stopped() != nil]; promtest.Value(t, reg, "histor_mirror_stopped") != want {
			t.Fatalf("histor_mirror_stopped is %v, want %v (stopped: %v)", promtest.Value(t, reg, "histor_mirror_stopped"), want, s.Stopped())
		}
		readsAcked(t, s, o, src, res.Entries, told)
		if err == nil {
			held = s.Size(o.did)
		}
		stopped = s.Stopped()
		if stopped != nil {
			// A sync tried again on the stopped store takes nothing more, and is answered at once.
			before, start := s.Size(o.did), time.Now()
			_, again := s.Sync(context.Background(), o.did, src)
			var se *pebbledb.StoppedError
			if again != nil && (!errors.As(again, &se) || !faultfs.IsFault(again)) {
				t.Fatalf("a sync on the stopped store: %v, want a *pebbledb.StoppedError naming the fault", again)
			}
			if took := time.Since(start); took > time.Second || s.Size(o.did) != before {
				t.Fatalf("a sync on the stopped store took %s and moved the mirror from %d to %d entries", took, before, s.Size(o.did))
			}
		}
		if cerr := s.Close(); cerr != nil && !faultfs.IsFault(cerr) {
			t.Fatalf("closing after the fault: %v", cerr)
		}
		return held, stopped, err
	}
	// verify crashes mem and checks what it kept, then that a sync resumes to the whole log.
	// It reads a copy of what was synced, as a restarted process would: a store stopped by a
	// fatal error may still hold its lock in this one.
	verify := func(t *testing.T, mem *vfs.MemFS, acked uint64) {
		t.Helper()
		mem.ResetToSyncedState()
		disk := vfs.NewStrictMem()
		if _, err := vfs.Clone(mem, disk, "m", "m"); err != nil {
			t.Fatalf("copying the synced disk: %v", err)
		}
		s, err := mirror.Open(mirror.Config{Dir: "m", FS: disk})
		if err != nil {
			t.Fatalf("reopening after the fault: %v", err)
		}
		held := s.Size(o.did)
		switch {
		case held < acked:
			t.Fatalf("reopened holding %d entries; a sync reported %d done", held, acked)
		case held%256 != 0 && held != size:
			t.Fatalf("reopened holding %d entries, not whole bundles", held)
		case s.Checkpoint(o.did) != nil && held != size:
			t.Fatalf("a checkpoint served over %d entries of %d", held, size)
		}
		if err := s.Follow(o.did, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Sync(context.Background(), o.did, src); err != nil {
			t.Fatalf("syncing after the fault: %v", err)
		}
		if s.Size(o.did) != size || len(index(t, s, o.did)) != 6 {
			t.Fatalf("resumed to %d entries and %d observations, want %d and 6", s.Size(o.did), len(index(t, s, o.did)), size)
		}
		s.Close()
	}

	counts := map[faultfs.Op]*faultfs.Plan{}
	room := &faultfs.Full{Bytes: 1 << 40}
	all := faultfs.All{room}
	for _, op := range faultfs.Ops {
		counts[op] = &faultfs.Plan{Kinds: []faultfs.Op{op}}
		all = append(all, counts[op])
	}
	mem := vfs.NewStrictMem()
	if held, _, err := run(t, mem, all); err != nil || held != size {
		t.Fatalf("a sync without faults: %d of %d, %v", held, size, err)
	}
	verify(t, mem, size)
	if counts[faultfs.Write].Seen() == 0 || counts[faultfs.Sync].Seen() == 0 {
		t.Fatal("the sync wrote nothing the test could fail")
	}
	failed, stopped := 0, 0
	for _, op := range faultfs.Ops {
		for _, at := range faultfs.Spread(counts[op].Seen(), 8) {
			for _, sticky := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s#%d/%s", op, at, map[bool]string{false: "once", true: "from-then-on"}[sticky]), func(t *testing.T) {
					mem := vfs.NewStrictMem()
					plan := &faultfs.Plan{Kinds: []faultfs.Op{op}, At: at, Sticky: sticky}
					held, halted, err := run(t, mem, plan)
					if len(plan.Fired()) == 0 && plan.Seen() < at {
						t.Skipf("this sync made %d such calls, not %d (the last ones vary with timing)", plan.Seen(), at)
					}
					if len(plan.Fired()) == 0 {
						t.Fatalf("the fault never fired (%d calls)", plan.Seen())
					}
					if err != nil {
						failed++
					}
					if halted != nil {
						stopped++
					}
					verify(t, mem, held)
				})
			}
		}
	}
	for _, frac := range []int64{10, 50, 90} {
		t.Run(fmt.Sprintf("full-disk-at-%d%%", frac), func(t *testing.T) {
			mem := vfs.NewStrictMem()
			full := &faultfs.Full{Bytes: room.Used() * frac / 100}
			held, halted, err := run(t, mem, full)
			if halted != nil {
				stopped++
			}
			if full.Refused() == 0 || err == nil {
				t.Fatalf("a disk full at %d of %d bytes refused %d writes, sync said %v", full.Bytes, room.Used(), full.Refused(), err)
			}
			failed++
			verify(t, mem, held)
		})
	}
	if failed == 0 {
		t.Fatal("no fault failed a sync: the test failed nothing that mattered")
	}
	t.Logf("calls in one sync: write %d, sync %d, create %d, rename %d, remove %d, close %d; %d bytes; %d runs failed the sync, %d stopped the store",
		counts[faultfs.Write].Seen(), counts[faultfs.Sync].Seen(), counts[faultfs.Create].Seen(), counts[faultfs.Rename].Seen(),
		counts[faultfs.Remove].Seen(), counts[faultfs.Close].Seen(), room.Used(), failed, stopped)
}

// readsAcked checks what the mirror serves after a sync, stopped or not, against what it
// acknowledged: the entries of the batches committed (acked), the observations OnObservation
// was told of. A failed batch must not show: Pebble applies it before its WAL sync and keeps
// it when the sync fails, so a read would serve what a crash loses.
func readsAcked(t *testing.T, s *mirror.Store, o *observer, src *logSource, acked uint64, told map[string]mirror.Observation) {
	t.Helper()
	size := o.log.Latest().Size
	if st := s.Statuses(); s.Size(o.did) != acked || len(st) != 1 || st[0].Size != acked {
		t.Fatalf("the mirror says it holds %d entries (status %+v); its batches committed %d", s.Size(o.did), st, acked)
	}
	cp := s.Checkpoint(o.did)
	if cp != nil && (acked != size || !bytes.Equal(cp, o.log.Latest().Checkpoint)) {
		t.Fatalf("a checkpoint served over %d entries committed of %d:\n%s", acked, size, cp)
	}
	for n := uint64(0); n*256 < size; n++ {
		path := torchwood.TilePath(tlog.Tile{H: 8, L: -1, N: int64(n), W: int(min(256, size-n*256))})
		got, err := s.Tile(o.did, path)
		want, _ := src.Get(context.Background(), path, 1<<30)
		if (cp != nil) != (err == nil) || (err == nil && !bytes.Equal(got, want)) {
			t.Fatalf("%s with the checkpoint %s: %d bytes, %v", path, map[bool]string{false: "unserved", true: "served"}[cp != nil], len(got), err)
		}
	}
	in := index(t, s, o.did)
	if !maps.Equal(in, told) {
		t.Fatalf("the index holds %d observations; %d were told as committed (%d entries committed)", len(in), len(told), acked)
	}
	for server, sri := range o.descs {
		_, err := s.Evidence(sri)
		if _, ok := told[server]; ok != (err == nil) {
			t.Fatalf("the descriptor of %s, whose observation was told %v: %v", server, ok, err)
		}
	}
}

// TestReadsDuringSync: while a batch of mirrored entries waits for its WAL sync, Pebble's
// reads show it already, and a crash then would lose it. The index and the descriptors must
// show nothing of it until the sync returns, and for good when it fails.
func TestReadsDuringSync(t *testing.T) {
	o := newObserver(t, "theta")
	for i := range 3 {
		o.observe("com.example/h"+string(rune('a'+i)), "https://h.example/mcp", "x", 300)
	}
	src := &logSource{"honest", o.log}
	for _, fails := range []bool{false, true} {
		t.Run(map[bool]string{false: "synced", true: "failed"}[fails], func(t *testing.T) {
			defer func(wait time.Duration) { pebbledb.FatalCloseWait = wait }(pebbledb.FatalCloseWait)
			pebbledb.FatalCloseWait = 200 * time.Millisecond
			h := faultfs.NewHold()
			var mu sync.Mutex
			told := map[string]mirror.Observation{}
			s, err := mirror.Open(mirror.Config{Dir: "m", FS: faultfs.Wrap(vfs.NewStrictMem(), h), BundlesPerBatch: 1,
				OnObservation: func(ob mirror.Observation) { mu.Lock(); told[ob.Server] = ob; mu.Unlock() }})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			defer h.Release(faultfs.ErrInjected) // a check that failed while the sync was held lets it go, failed
			if err := s.Follow(o.did, ""); err != nil {
				t.Fatal(err)
			}
			h.Arm(1) // the first sync is the adopted checkpoint's; the next, the first bundle's batch
			done := make(chan mirror.Result)
			go func() {
				res, _ := s.Sync(context.Background(), o.did, src)
				done <- res
			}()
			<-h.Held()
			// The commit applies its batch beside the WAL's sync: wait until Pebble's reads show it.
			for deadline := time.Now().Add(5 * time.Second); mirror.RawViewKeys(s, o.did) == 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("Pebble's reads during the sync never showed the batch: the premise is gone")
				}
			}
			readsAcked(t, s, o, src, 0, told)
			release := error(nil)
			if fails {
				release = faultfs.ErrInjected
			}
			h.Release(release)
			res := <-done
			mu.Lock()
			defer mu.Unlock()
			if fails != (res.Entries == 0) {
				t.Fatalf("the sync whose first batch's sync returned %v mirrored %d entries", release, res.Entries)
			}
			readsAcked(t, s, o, src, res.Entries, told)
		})
	}
}

// TestFlushFails: the mirror store on a disk that takes its WAL but no table stops at the
// first failed flush and says why, refuses later batches at once, and reopens after a crash
// with every batch acknowledged (faulttest.FlushFails). Without it Pebble retried the flush
// for ever and stalled the next batch that needed a new memtable for good.
func TestFlushFails(t *testing.T) {
	faulttest.FlushFails(t, faulttest.Scenario[*mirror.Store]{
		Dir:    "m",
		Open:   func(fsys vfs.FS) (*mirror.Store, error) { return mirror.Open(mirror.Config{Dir: "m", FS: fsys}) },
		Fill:   mirror.Fill,
		Filled: mirror.Filled,
		Again:  func(s *mirror.Store) error { return mirror.Fill(s, 1<<30) },
	})
}
