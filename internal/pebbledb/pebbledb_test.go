package pebbledb

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

func TestFatalfLogsAndPanicsWithTheCause(t *testing.T) {
	var buf bytes.Buffer
	l := Quiet(slog.New(slog.NewTextHandler(&buf, nil)))
	err := Apply(func() error {
		l.Infof("chatter %d", 1)
		l.Fatalf("write %s: %v", "000001.log", syscall.ENOSPC)
		return nil
	})
	var f *Fatal
	if !errors.As(err, &f) || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "pebble: write 000001.log") {
		t.Fatalf("Apply returned %v", err)
	}
	if out := buf.String(); strings.Contains(out, "chatter") || !strings.Contains(out, "pebble cannot go on") {
		t.Fatalf("logged %q", out)
	}
}

func TestApplyRecoversAnErrorPanic(t *testing.T) {
	err := Apply(func() error { panic(syscall.EIO) })
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("Apply returned %v", err)
	}
	if err := Apply(func() error { return syscall.EPERM }); err != syscall.EPERM {
		t.Fatalf("Apply returned %v", err)
	}
}

func TestApplyPassesOtherPanics(t *testing.T) {
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v", r)
		}
	}()
	Apply(func() error { panic("boom") })
}

func TestLoudLoggerLogsInfo(t *testing.T) {
	var buf bytes.Buffer
	Logger{L: slog.New(slog.NewTextHandler(&buf, nil))}.Infof("flushed %d", 3)
	if !strings.Contains(buf.String(), "flushed 3") {
		t.Fatalf("logged %q", buf.String())
	}
	Logger{}.Infof("nothing") // a nil L logs nothing and does not panic
}

func TestGuardStopsWritesAfterAFatalError(t *testing.T) {
	var g Guard
	if err := g.Apply(func() error { return syscall.EIO }); err != syscall.EIO || g.Stopped() != nil {
		t.Fatalf("an ordinary error: %v, stopped %v", err, g.Stopped())
	}
	err := g.Apply(func() error { Quiet(nil).Fatalf("fatal commit error: %v", syscall.ENOSPC); return nil })
	if !errors.Is(err, syscall.ENOSPC) || !errors.Is(g.Stopped(), syscall.ENOSPC) {
		t.Fatalf("a fatal error: %v, stopped %v", err, g.Stopped())
	}
	called := false
	err = g.Apply(func() error { called = true; return nil })
	var stopped *StoppedError
	if called || !errors.As(err, &stopped) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write after it: called %v, %v", called, err)
	}
}

// TestOpenMakesTheDirectoryDurable: a store created and written with a synced batch is all
// there after a crash that loses every unsynced change, the directory's own name included.
func TestOpenMakesTheDirectoryDurable(t *testing.T) {
	mem := vfs.NewStrictMem()
	db, err := Open("data/store", &pebble.Options{FS: mem, Logger: Quiet(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("k"), []byte("v"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	mem.SetIgnoreSyncs(true) // what Close writes from here on is lost: a crash now
	db.Close()
	mem.ResetToSyncedState()
	mem.SetIgnoreSyncs(false)
	db, err = Open("data/store", &pebble.Options{FS: mem, Logger: Quiet(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v, closer, err := db.Get([]byte("k"))
	if err != nil {
		t.Fatalf("the synced write after the crash: %v", err)
	}
	defer closer.Close()
	if string(v) != "v" {
		t.Fatalf("read %q", v)
	}
	if err := MakeDir(mem, "data/store"); err != nil {
		t.Fatalf("MakeDir of an existing directory: %v", err)
	}
}
