package registry

import (
	"errors"
	"fmt"
)

// Errors a caller may want to tell apart; every one leaves the harvest
// incomplete.
var (
	// ErrRepeatedCursor: the registry sent a cursor it had sent before, so
	// the pagination loops.
	ErrRepeatedCursor = errors.New("registry pagination cursor repeated")
	// ErrTooManyPages: the pagination did not end within Options.MaxPages.
	ErrTooManyPages = errors.New("registry pagination exceeded the page bound")
	// ErrTooManyServers: the registry listed more than Options.MaxServers entries.
	ErrTooManyServers = errors.New("registry listed more servers than the bound")
	// ErrPageTooLarge: a page body exceeded Options.MaxPageBytes.
	ErrPageTooLarge = errors.New("registry page exceeded the byte bound")
)

// PageError says which page failed and why, after all retries.
type PageError struct {
	Page   int    // 1-based
	URL    string // the request URL
	Status int    // last HTTP status, 0 if none was received
	Err    error
}

func (e *PageError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("fetching registry page %d (%s): HTTP %d: %v", e.Page, e.URL, e.Status, e.Err)
	}
	return fmt.Sprintf("fetching registry page %d (%s): %v", e.Page, e.URL, e.Err)
}

func (e *PageError) Unwrap() error { return e.Err }
