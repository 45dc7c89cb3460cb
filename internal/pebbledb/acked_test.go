package pebbledb_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/histor-observer/histor/internal/faultfs"
	"github.com/histor-observer/histor/internal/pebbledb"
)

// TestAckedShowsOnlyAcknowledged: while a commit's WAL sync is held, Pebble's own reads show
// it already and Acked's do not; once the sync returns they do, and when it fails they never
// do, the later commits are refused, and Close still returns. After Close reads and commits
// answer ErrClosed.
func TestAckedShowsOnlyAcknowledged(t *testing.T) {
	defer func(wait time.Duration) { pebbledb.FatalCloseWait = wait }(pebbledb.FatalCloseWait)
	pebbledb.FatalCloseWait = 200 * time.Millisecond
	for _, fails := range []bool{false, true} {
		t.Run(map[bool]string{false: "synced", true: "failed"}[fails], func(t *testing.T) {
			h := faultfs.NewHold()
			db, err := pebbledb.Open("db", &pebble.Options{FS: faultfs.Wrap(vfs.NewStrictMem(), h), Logger: pebbledb.Quiet(nil)})
			if err != nil {
				t.Fatal(err)
			}
			var g pebbledb.Guard
			a := pebbledb.NewAcked(db, &g)
			defer a.Close()
			defer h.Release(faultfs.ErrInjected) // a check that failed while the sync was held lets it go, failed
			commit := func(v string) error { return set(a, v) }
			if err := commit("1"); err != nil {
				t.Fatal(err)
			}
			h.Arm(0)
			done := make(chan error, 1)
			go func() { done <- commit("2") }()
			<-h.Held()
			// The commit applies its batch beside the WAL's sync: wait until Pebble's reads show it.
			for deadline := time.Now().Add(5 * time.Second); get(t, db) != "2"; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("Pebble's reads during the sync never showed the batch: the premise is gone")
				}
			}
			if got := ackedGet(t, a); got != "1" {
				t.Fatalf("during the sync Acked shows %q, want 1", got)
			}
			release := error(nil)
			if fails {
				release = faultfs.ErrInjected
			}
			h.Release(release)
			err = <-done
			want := "2"
			if fails {
				want = "1"
				if !faultfs.IsFault(err) {
					t.Fatalf("the failed commit answered %v", err)
				}
				if err := commit("3"); !errors.As(err, new(*pebbledb.StoppedError)) {
					t.Fatalf("a commit after the failure: %v", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got := ackedGet(t, a); got != want {
				t.Fatalf("after the sync returned %v Acked shows %q, want %s", release, got, want)
			}
			if err := a.Close(); err != nil && !fails {
				t.Fatal(err)
			}
			if err := a.Read(func(pebble.Reader) error { return nil }); !errors.Is(err, pebbledb.ErrClosed) {
				t.Fatalf("a read after Close: %v", err)
			}
			if err := commit("4"); !errors.Is(err, pebbledb.ErrClosed) && !fails {
				t.Fatalf("a commit after Close: %v", err)
			}
		})
	}
}

// set commits k = v through a (Write, so through Commit).
func set(a *pebbledb.Acked, v string) error {
	return a.Write(func(b *pebble.Batch) error { return b.Set([]byte("k"), []byte(v), nil) })
}

func get(t *testing.T, r pebble.Reader) string {
	t.Helper()
	v, closer, err := r.Get([]byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	return string(v)
}

func ackedGet(t *testing.T, a *pebbledb.Acked) string {
	t.Helper()
	var v string
	if err := a.Read(func(r pebble.Reader) error { v = get(t, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestAckedCommitWaitsForReads: a read of the database that began before a commit reads
// nothing of it, however long it takes: the commit applies only after it.
func TestAckedCommitWaitsForReads(t *testing.T) {
	db, err := pebbledb.Open("db", &pebble.Options{FS: vfs.NewMem(), Logger: pebbledb.Quiet(nil)})
	if err != nil {
		t.Fatal(err)
	}
	var g pebbledb.Guard
	a := pebbledb.NewAcked(db, &g)
	defer a.Close()
	commit := func(v string) error { return set(a, v) }
	if err := commit("1"); err != nil {
		t.Fatal(err)
	}
	inRead, goOn, read := make(chan struct{}), make(chan struct{}), make(chan [2]string, 1)
	go a.Read(func(r pebble.Reader) error {
		first := get(t, r)
		close(inRead)
		<-goOn
		read <- [2]string{first, get(t, r)}
		return nil
	})
	<-inRead
	committed := make(chan error, 1)
	go func() { committed <- commit("2") }()
	select {
	case err := <-committed:
		t.Fatalf("the commit returned %v during a read that began before it", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(goOn)
	if got := <-read; got != [2]string{"1", "1"} {
		t.Fatalf("the read that began before the commit read %q", got)
	}
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	if got := ackedGet(t, a); got != "2" {
		t.Fatalf("after the commit Acked shows %q", got)
	}
}
