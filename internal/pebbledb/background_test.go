package pebbledb_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/histor-observer/histor/internal/faultfs"
	"github.com/histor-observer/histor/internal/pebbledb"
)

// syncBuffer is a bytes.Buffer for a logger written from Pebble's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatchStopsAtAFailedFlush: on a disk that takes the WAL but no table, the first flush
// fails; a watched Guard stops at it, says why (a *BackgroundError naming the fault) and
// logs it although the logger is quiet, refuses the next write at once, and Close returns
// within its bound. Every write acknowledged before is in the WAL: the database reopened
// on a sound disk holds them.
func TestWatchStopsAtAFailedFlush(t *testing.T) {
	defer func(wait time.Duration) { pebbledb.FatalCloseWait = wait }(pebbledb.FatalCloseWait)
	pebbledb.FatalCloseWait = 200 * time.Millisecond
	mem := vfs.NewStrictMem()
	tables := &faultfs.Matching{Suffix: ".sst", Kinds: []faultfs.Op{faultfs.Create}}
	var logged syncBuffer
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	var g pebbledb.Guard
	opts := &pebble.Options{FS: faultfs.Wrap(mem, tables), Logger: pebbledb.Quiet(logger), MemTableSize: 256 << 10}
	g.Watch(opts, logger)
	db, err := pebbledb.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	value := bytes.Repeat([]byte("v"), 1<<10)
	acked := 0
	var refused error
	deadline := time.Now().Add(20 * time.Second)
	for refused == nil && time.Now().Before(deadline) {
		start := time.Now()
		refused = faultfs.Within(5*time.Second, func() error {
			return g.Apply(func() error { return db.Set(fmt.Appendf(nil, "k%06d", acked), value, pebble.Sync) })
		})
		if refused == nil {
			acked++
		} else if took := time.Since(start); took > time.Second {
			t.Fatalf("the write at the failure took %s to answer", took)
		}
	}
	var se *pebbledb.StoppedError
	var be *pebbledb.BackgroundError
	if !errors.As(refused, &se) || !errors.As(refused, &be) || be.Op != "flush" || !faultfs.IsFault(refused) {
		t.Fatalf("after %d writes: %v, want a *StoppedError for a failed flush naming the fault", acked, refused)
	}
	if acked < 128 {
		t.Fatalf("stopped after %d writes of 1 KiB, before a 256 KiB memtable was half full", acked)
	}
	if stopped := g.Stopped(); !errors.As(stopped, &be) || !faultfs.IsFault(stopped) {
		t.Fatalf("Stopped: %v", stopped)
	}
	start := time.Now()
	if err := g.Apply(func() error { return db.Set([]byte("again"), value, pebble.Sync) }); !errors.As(err, &se) || time.Since(start) > 10*time.Millisecond {
		t.Fatalf("a write after the stop: %v after %s", err, time.Since(start))
	}
	if out := logged.String(); !strings.Contains(out, "pebble background error") || !strings.Contains(out, faultfs.ErrInjected.Error()) {
		t.Fatalf("logged %q", out)
	}
	closed := make(chan error, 1)
	go func() { closed <- g.Close(db) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}

	mem.ResetToSyncedState()
	disk := vfs.NewStrictMem()
	if _, err := vfs.Clone(mem, disk, "db", "db"); err != nil {
		t.Fatal(err)
	}
	again, err := pebbledb.Open("db", &pebble.Options{FS: disk, Logger: pebbledb.Quiet(nil)})
	if err != nil {
		t.Fatalf("reopening on a sound disk: %v", err)
	}
	defer again.Close()
	for i := range acked {
		if _, closer, err := again.Get(fmt.Appendf(nil, "k%06d", i)); err != nil {
			t.Fatalf("acknowledged write %d of %d lost: %v", i, acked, err)
		} else {
			closer.Close()
		}
	}
}
