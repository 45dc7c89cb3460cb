package faultfs

import (
	"errors"
	"slices"
	"syscall"
	"testing"

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
