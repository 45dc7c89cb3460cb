package mirror_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"

	"github.com/histor-observer/histor/node/mirror"
)

// TestCrashAtAnyWrite cuts the power at every point of a sync in turn: from the k-th
// filesystem operation on, nothing reaches the disk (a write cache lost with the power).
// Reopened, the mirror holds whole verified bundles only, serves no checkpoint of a tree it
// does not hold whole, and one more sync brings it to the whole log with every observation.
func TestCrashAtAnyWrite(t *testing.T) {
	o := newObserver(t, "zeta")
	for i := range 6 {
		o.observe("com.example/c"+string(rune('a'+i)), "https://c.example/mcp", "x", 120)
	}
	size := o.log.Latest().Size
	src := &logSource{"honest", o.log}

	// One clean sync counts the operations a sync makes.
	var ops atomic.Int64
	count := errorfs.InjectorFunc(func(errorfs.Op, string) error { ops.Add(1); return nil })
	sync := func(fs vfs.FS) *mirror.Store {
		t.Helper()
		s, err := mirror.Open(mirror.Config{Dir: "m", FS: fs, BundlesPerBatch: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Follow(o.did, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Sync(context.Background(), o.did, src); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := sync(errorfs.Wrap(vfs.NewMem(), count))
	s.Close()
	total := ops.Load()
	if total < 20 {
		t.Fatalf("a sync made %d filesystem operations; the test needs more", total)
	}
	step := max(total/60, 1)
	lost := 0 // cuts after which the mirror held less than the log
	for k := int64(1); k < total; k += step {
		mem := vfs.NewStrictMem()
		ops.Store(0)
		cut := errorfs.InjectorFunc(func(errorfs.Op, string) error {
			if ops.Add(1) == k {
				mem.SetIgnoreSyncs(true)
			}
			return nil
		})
		s := sync(errorfs.Wrap(mem, cut))
		s.Close()
		mem.ResetToSyncedState()
		mem.SetIgnoreSyncs(false)

		s, err := mirror.Open(mirror.Config{Dir: "m", FS: mem})
		if err != nil {
			t.Fatalf("cut at operation %d of %d: reopening: %v", k, total, err)
		}
		held := s.Size(o.did)
		if held < size {
			lost++
		}
		if held%256 != 0 && held != size {
			t.Errorf("cut at operation %d: %d entries held, not whole bundles", k, held)
		}
		if cp := s.Checkpoint(o.did); cp != nil && held != size {
			t.Errorf("cut at operation %d: a checkpoint served over %d entries of %d", k, held, size)
		}
		s.Close()
		s = sync(mem)
		if s.Size(o.did) != size || len(index(t, s, o.did)) != 6 {
			t.Errorf("cut at operation %d: resumed to %d entries and %d observations, want %d and 6", k, s.Size(o.did), len(index(t, s, o.did)), size)
		}
		if _, err := s.Prove(o.did, 0); err != nil {
			t.Errorf("cut at operation %d: proving the first leaf after resuming: %v", k, err)
		}
		s.Close()
	}
	if lost == 0 {
		t.Fatal("no cut lost anything: the test cut nothing")
	}
	t.Logf("%d cuts over %d operations, %d of them lost entries", (total-1+step-1)/step, total, lost)
}
