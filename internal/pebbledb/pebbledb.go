// Package pebbledb is what every store that keeps a Pebble database shares: opening it in a
// directory whose name is durable, the logger, and the recovery of the fatal errors Pebble
// raises through it.
//
// Pebble calls Logger.Fatalf when it cannot go on (a WAL write that failed, a WAL it could
// not create, a MANIFEST it cannot sync, damage it finds) and expects it never to return.
// Ours logs the message as an error, then panics with a *Fatal: in a store's own goroutine
// Apply turns that panic into an error, so the store stops instead of the process ending; in
// Pebble's background goroutines the panic ends the process, after the logged message said
// why, and what was synced reopens whole.
package pebbledb

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// Open opens the database in dir with opts (its FS nil: the operating system's), first
// making dir if it is missing so that its name is durable: Pebble syncs the directory it
// writes in but not the parent that names it, so a crash soon after a store was created
// could lose the whole store, every synced write in it included.
func Open(dir string, opts *pebble.Options) (*pebble.DB, error) {
	fsys := opts.FS
	if fsys == nil {
		fsys = vfs.Default
	}
	if err := MakeDir(fsys, dir); err != nil {
		return nil, err
	}
	return pebble.Open(dir, opts)
}

// MakeDir makes dir and the missing directories above it, each made durable by syncing the
// directory that holds its name. An existing dir is left as it is.
func MakeDir(fsys vfs.FS, dir string) error {
	var made []string
	for d := dir; ; d = fsys.PathDir(d) {
		if _, err := fsys.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("making %s: %w", dir, err)
		}
		made = append(made, d)
		if fsys.PathDir(d) == d {
			break
		}
	}
	if len(made) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making %s: %w", dir, err)
	}
	for _, d := range made {
		if err := syncDir(fsys, fsys.PathDir(d)); err != nil {
			return fmt.Errorf("making %s: %w", dir, err)
		}
	}
	return nil
}

func syncDir(fsys vfs.FS, dir string) error {
	d, err := fsys.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Logger routes Pebble's messages into slog; with Quiet, its informational chatter is
// dropped and only what makes it stop is logged. A nil L logs nothing.
type Logger struct {
	L     *slog.Logger
	Quiet bool
}

// Quiet is a Logger that keeps Pebble's chatter out of logger and logs why it stopped.
func Quiet(logger *slog.Logger) Logger { return Logger{L: logger, Quiet: true} }

// Infof implements pebble.Logger.
func (p Logger) Infof(format string, args ...any) {
	if p.L != nil && !p.Quiet {
		p.L.Info(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

// Fatalf implements pebble.Logger: it logs, then panics with a *Fatal.
func (p Logger) Fatalf(format string, args ...any) {
	f := &Fatal{Msg: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			f.Err = err
			break
		}
	}
	if p.L != nil {
		p.L.Error("pebble cannot go on", "component", "pebble", "err", f.Msg)
	}
	panic(f)
}

// Fatal is what Fatalf panics with: Pebble's message, and the error among its arguments
// (the disk's, say ENOSPC), which it wraps.
type Fatal struct {
	Msg string
	Err error
}

func (f *Fatal) Error() string { return "pebble: " + f.Msg }
func (f *Fatal) Unwrap() error { return f.Err }

// Apply runs fn, a call into Pebble's commit pipeline (Batch.Commit, DB.Apply,
// DB.ApplyNoSyncWait), turning the fatal error it raises in the caller's goroutine into an
// error: a *Fatal from Fatalf, or the raw error a WAL rotation panics with. The store must
// commit nothing more after one: Pebble's commit pipeline cannot go on. Other panics pass.
func Apply(fn func() error) (err error) {
	defer func() {
		switch p := recover().(type) {
		case nil:
		case *Fatal:
			err = p
		case error:
			err = &Fatal{Msg: "commit: " + p.Error(), Err: p}
		default:
			panic(p)
		}
	}()
	return fn()
}

// Guard runs a store's writes through Apply and remembers the first fatal error: every
// write after it fails with a *StoppedError at once instead of entering a commit pipeline
// that cannot go on (it would wait for ever). Reads are not its business. The zero Guard is
// ready; it is safe for concurrent use.
//
// Watch has a Guard stop at a failed flush or compaction too.
type Guard struct{ first atomic.Pointer[error] }

// Apply runs fn as Apply does, unless a fatal error or a failed flush or compaction (Watch)
// stopped the store before.
func (g *Guard) Apply(fn func() error) error {
	if first := g.first.Load(); first != nil {
		return &StoppedError{Cause: *first}
	}
	err := Apply(fn)
	if f := (*Fatal)(nil); errors.As(err, &f) {
		g.first.CompareAndSwap(nil, &err)
	}
	return err
}

// Stopped is the fatal error, or the failed flush's or compaction's *BackgroundError, that
// stopped the store's writes; nil while they go on.
func (g *Guard) Stopped() error {
	if first := g.first.Load(); first != nil {
		return *first
	}
	return nil
}

// StoppedError is a write refused because an earlier one met a fatal error, or a flush or
// compaction failed; the store takes writes again once reopened.
type StoppedError struct{ Cause error }

func (e *StoppedError) Error() string {
	return "store stopped after a fatal write error: " + e.Cause.Error()
}
func (e *StoppedError) Unwrap() error { return e.Cause }

// FatalCloseWait bounds how long Guard.Close waits for Pebble after a fatal error. A
// variable only so that fault tests, which meet many such stores, can wait less.
var FatalCloseWait = 5 * time.Second

// Close closes db. After a fatal error Pebble may never finish closing (a WAL it could not
// rotate leaves its mutex held for good), so then Close waits FatalCloseWait at most and
// leaves the database to the process's exit, saying so.
func (g *Guard) Close(db *pebble.DB) error { return g.closeAfter(db, nil) }

// closeAfter is Close, calling before (nil: nothing) first, within the same bound.
func (g *Guard) closeAfter(db *pebble.DB, before func() error) error {
	closeAll := func() error {
		if before != nil {
			if err := before(); err != nil {
				return errors.Join(err, db.Close())
			}
		}
		return db.Close()
	}
	if g.Stopped() == nil {
		return closeAll()
	}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("closing pebble after a fatal error: %v", p)
			}
		}()
		done <- closeAll()
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(FatalCloseWait):
		return fmt.Errorf("closing pebble after a fatal error: not closed after %s; the process's exit releases it (%w)", FatalCloseWait, g.Stopped())
	}
}
