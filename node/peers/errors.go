package peers

import (
	"errors"
	"fmt"
)

// What Add refuses. Every refusal is a *RefusedError wrapping one of these.
var (
	// ErrMalformed: the observation, label, head or proof does not parse.
	ErrMalformed = errors.New("malformed")
	// ErrUnknownObserver: the observer is not on the allow-list.
	ErrUnknownObserver = errors.New("observer not on the allow-list")
	// ErrSignature: a signature (observation, label or head) is not the observer's.
	ErrSignature = errors.New("signature is not the observer's")
	// ErrHead: the head is not one this node accepts for the observer (too small for the
	// leaf, another log's, or refused by Config.CheckHead).
	ErrHead = errors.New("head refused")
	// ErrNotIncluded: the inclusion proof does not put the label at the leaf index under
	// the head's root.
	ErrNotIncluded = errors.New("label not proven included")
	// ErrMismatch: the label does not say what the observation claims.
	ErrMismatch = errors.New("label does not match the observation")
	// ErrStale: the store holds a later observation of that server by that observer.
	ErrStale = errors.New("older than the kept observation")
	// ErrFull: a bound (observers per server, servers per observer) is reached.
	ErrFull = errors.New("bound reached")
)

// ErrClosed: the store was closed; nothing more is read from it or written to it.
var ErrClosed = errors.New("peer store closed")

// RefusedError says which observation Add refused and why; errors.Is tells the reasons apart.
type RefusedError struct {
	Observer string // did:key, "" when the observation did not parse
	Server   string
	Reason   error // one of the Err values
	Detail   error // what failed, may be nil
}

func (e *RefusedError) Error() string {
	s := fmt.Sprintf("refusing observation of %q by %q: %v", e.Server, e.Observer, e.Reason)
	if e.Detail != nil {
		s += ": " + e.Detail.Error()
	}
	return s
}

// Unwrap returns both the reason and the detail, so errors.Is finds either.
func (e *RefusedError) Unwrap() []error {
	if e.Detail == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Detail}
}
