package log

import (
	"errors"
	"fmt"
)

// ErrNotFound is returned when a key, entry, head, tile or evidence body is
// not in the log.
var ErrNotFound = errors.New("not found")

// ErrNoLog is returned by Fsck for a directory that holds no log: missing,
// empty, or holding a log whose creation never finished (the next Open
// empties it and creates the log).
var ErrNoLog = errors.New("no log in this directory")

// errMissing is what a CorruptError wraps for a record the log should hold
// but does not; it is not ErrNotFound, so a damaged store is never taken
// for a request beyond the log.
var errMissing = errors.New("missing from the store")

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("log is closed")

// CorruptError says the stored log cannot be trusted; What names the part
// that is missing or wrong. Open never signs over a store that gives one.
type CorruptError struct {
	What string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt log: %s: %v", e.What, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// RangeError reports an argument outside what the log holds or allows.
type RangeError struct {
	What string
}

func (e *RangeError) Error() string { return "out of range: " + e.What }

// EntryError refuses one entry or evidence body of an Append; nothing of that
// call was written.
type EntryError struct {
	ID     string // label id or evidence SRI
	Reason string
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("refusing %q: %s", e.ID, e.Reason)
}

func corrupt(what string, err error) error {
	return &CorruptError{What: what, Err: err}
}

// StoppedError refuses an Append or SignHead after a write or sync of the
// store failed: the log takes no more appends until it is reopened, and Err
// is the store's error that stopped it.
type StoppedError struct {
	Op  string // "write" or "sync"
	Err error
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("log stopped after a failed %s: %v", e.Op, e.Err)
}

func (e *StoppedError) Unwrap() error { return e.Err }
