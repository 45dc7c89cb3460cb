package faultfs

import (
	"errors"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
)

// TestPlan: the At-th call of the named kinds fails, once or from then on; other kinds pass.
func TestPlan(t *testing.T) {
	for _, sticky := range []bool{false, true} {
		p := &Plan{Kinds: []Op{Sync}, At: 2, Sticky: sticky}
		fs := Wrap(vfs.NewMem(), p)
		f, err := fs.Create("a")
		if err != nil {
			t.Fatal(err)
		}
		var errs []error
		for range 3 {
			if _, err := f.Write([]byte("x")); err != nil {
				t.Fatalf("a write failed under a sync plan: %v", err)
			}
			errs = append(errs, f.Sync())
		}
		if errs[0] != nil || !errors.Is(errs[1], ErrInjected) || (errs[2] != nil) != sticky {
			t.Fatalf("sticky %v: syncs answered %v", sticky, errs)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if p.Seen() != 3 || len(p.Fired()) != map[bool]int{false: 1, true: 2}[sticky] {
			t.Fatalf("sticky %v: seen %d, fired %v", sticky, p.Seen(), p.Fired())
		}
	}
}

// TestEveryKindIsAsked: each mutating call of the FS and its files reaches the injector
// under its kind, and a failed close still closes the file.
func TestEveryKindIsAsked(t *testing.T) {
	for _, op := range Ops {
		p := &Plan{Kinds: []Op{op}, At: 1}
		fs := Wrap(vfs.NewMem(), p)
		var err error
		step := func(e error) {
			if err == nil {
				err = e
			}
		}
		step(fs.MkdirAll("d", 0o700))
		f, cerr := fs.Create("d/a")
		step(cerr)
		if f != nil {
			_, werr := f.Write([]byte("x"))
			step(werr)
			step(f.Sync())
			step(f.Close())
		}
		step(fs.Rename("d/a", "d/b"))
		step(fs.Remove("d/b"))
		if !errors.Is(err, ErrInjected) || len(p.Fired()) != 1 {
			t.Fatalf("%s: first error %v, fired %v", op, err, p.Fired())
		}
	}
}

// TestFull: writes fit until the room is used, then fail whole with ENOSPC.
func TestFull(t *testing.T) {
	full := &Full{Bytes: 10}
	f, err := Wrap(vfs.NewMem(), full).Create("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	if n, err := f.Write(make([]byte, 4)); n != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write past the room: %d, %v", n, err)
	}
	if _, err := f.Write(make([]byte, 2)); err != nil {
		t.Fatalf("a write that fits: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("a sync on a full disk: %v", err)
	}
	if full.Used() != 10 || full.Refused() != 1 {
		t.Fatalf("used %d, refused %d", full.Used(), full.Refused())
	}
}

func TestSwitchAllSpread(t *testing.T) {
	var s Switch
	if err := s.Inject(Write, "a", 1); err != nil {
		t.Fatalf("an unarmed switch failed a call: %v", err)
	}
	count := &Plan{}
	s.Arm(All{count, &Plan{Kinds: []Op{Sync}, At: 1}})
	if err := s.Inject(Write, "a", 1); err != nil {
		t.Fatalf("a write: %v", err)
	}
	if err := s.Inject(Sync, "a", 0); !IsFault(err) {
		t.Fatalf("the first sync: %v", err)
	}
	if count.Seen() != 2 {
		t.Fatalf("All asked the counting plan %d times, want 2", count.Seen())
	}
	s.Arm(nil)
	if err := s.Inject(Sync, "a", 0); err != nil || count.Seen() != 2 {
		t.Fatalf("a disarmed switch: %v, %d", err, count.Seen())
	}
	if got := Spread(3, 5); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("Spread(3, 5) = %v", got)
	}
	if got := Spread(10, 4); !slices.Equal(got, []int{1, 4, 7, 10}) {
		t.Fatalf("Spread(10, 4) = %v", got)
	}
}

// TestSweep: the cases after a counting run fail each kind it made at spread call numbers,
// once and from then on, then fill the disk; a case says whether a run met its fault, and a
// point past the calls made is a skip, not a failure.
func TestSweep(t *testing.T) {
	c := NewCounter()
	fs := Wrap(vfs.NewMem(), c)
	f, err := fs.Create("a")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := f.Write([]byte("xyz")); err != nil {
			t.Fatal(err)
		}
	}
	if c.Seen(Write) != 3 || c.Seen(Create) != 1 || c.Seen(Sync) != 0 || c.Written() != 9 {
		t.Fatalf("counted %v", c)
	}
	var names []string
	for _, k := range Sweep(c, 8) {
		names = append(names, k.Name)
	}
	want := []string{"write#1/once", "write#1/from-then-on", "write#2/once", "write#2/from-then-on", "write#3/once",
		"write#3/from-then-on", "create#1/once", "create#1/from-then-on", "full-disk-at-10%", "full-disk-at-50%", "full-disk-at-90%"}
	if !slices.Equal(names, want) {
		t.Fatalf("cases %v, want %v", names, want)
	}
	// run plays writes writes under case i of a fresh sweep: a case's plan counts once.
	run := func(i, writes int) (string, bool) {
		k := Sweep(c, 8)[i]
		f, _ := Wrap(vfs.NewMem(), k.Injector()).Create("a")
		for range writes {
			f.Write([]byte("xyz"))
		}
		return k.Missed()
	}
	if why, skip := run(4, 3); why != "" || skip {
		t.Fatalf("a fault met: %q %v", why, skip)
	}
	if why, skip := run(4, 2); why == "" || !skip {
		t.Fatalf("a point past the calls made: %q %v", why, skip)
	}
	if why, skip := run(8, 3); why != "" || skip || !Sweep(c, 8)[8].FullDisk() {
		t.Fatalf("a disk full at 10%%: %q %v", why, skip)
	}
	if why, skip := run(9, 0); why == "" || skip {
		t.Fatalf("a full disk never met: %q %v", why, skip)
	}
}

// TestWithin: an answer, a panic and a hang are each told apart, none of them a fault.
func TestWithin(t *testing.T) {
	if err := Within(time.Second, func() error { return ErrInjected }); !IsFault(err) {
		t.Fatalf("an answer: %v", err)
	}
	var pe *PanicError
	if err := Within(time.Second, func() error { panic(ErrInjected) }); !errors.As(err, &pe) || IsFault(err) {
		t.Fatalf("a panic: %v", err)
	}
	var he *HangError
	block := make(chan struct{})
	defer close(block)
	if err := Within(10*time.Millisecond, func() error { <-block; return nil }); !errors.As(err, &he) || IsFault(err) {
		t.Fatalf("a hang: %v", err)
	}
}

// TestHold: nothing is held before Arm; once armed the skipped syncs pass, the next waits
// for Release and returns its error, later ones pass, and a second Release does nothing.
func TestHold(t *testing.T) {
	h := NewHold()
	fs := Wrap(vfs.NewMem(), h)
	wal, err := fs.Create("000001.log")
	if err != nil {
		t.Fatal(err)
	}
	other, err := fs.Create("MANIFEST-000001")
	if err != nil {
		t.Fatal(err)
	}
	if err := wal.Sync(); err != nil {
		t.Fatalf("a sync before Arm: %v", err)
	}
	h.Arm(1)
	if err := other.Sync(); err != nil {
		t.Fatalf("a sync of another file: %v", err)
	}
	if err := wal.Sync(); err != nil {
		t.Fatalf("the skipped sync: %v", err)
	}
	done := make(chan error)
	go func() { done <- wal.Sync() }()
	<-h.Held()
	select {
	case err := <-done:
		t.Fatalf("the held sync returned %v before Release", err)
	case <-time.After(20 * time.Millisecond):
	}
	h.Release(ErrInjected)
	if err := <-done; !errors.Is(err, ErrInjected) {
		t.Fatalf("the held sync returned %v", err)
	}
	h.Release(nil) // does nothing, does not block
	if err := wal.Sync(); err != nil {
		t.Fatalf("a sync after the held one: %v", err)
	}
}

// TestMatching: calls of its kinds on a path with its suffix fail, every one; others pass.
func TestMatching(t *testing.T) {
	m := &Matching{Suffix: ".sst", Kinds: []Op{Create}}
	fs := Wrap(vfs.NewMem(), m)
	for range 2 {
		if _, err := fs.Create("000004.sst"); !errors.Is(err, ErrInjected) {
			t.Fatalf("creating a table: %v", err)
		}
	}
	f, err := fs.Create("000002.log")
	if err != nil {
		t.Fatalf("creating a WAL: %v", err)
	}
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fs.Rename("000002.log", "000003.sst"); err != nil {
		t.Fatalf("a rename, not a kind it fails: %v", err)
	}
	if m.Fired() != 2 {
		t.Fatalf("fired %d, want 2", m.Fired())
	}
}
