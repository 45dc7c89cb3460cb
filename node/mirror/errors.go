package mirror

import (
	"errors"
	"fmt"
)

// Reasons a source is refused, wrapped by *SourceError.
var (
	// ErrSignature: the checkpoint is not signed by the observer's key under its origin.
	ErrSignature = errors.New("checkpoint not signed by the observer")
	// ErrMalformed: bytes that do not parse as what the path names.
	ErrMalformed = errors.New("malformed")
	// ErrOversized: more bytes than the bound of what the path names.
	ErrOversized = errors.New("oversized")
	// ErrTruncated: an entry bundle with fewer entries than its path names.
	ErrTruncated = errors.New("truncated")
	// ErrMismatch: entries or hash tiles whose hashes are not those of the signed
	// checkpoint (forged or reordered).
	ErrMismatch = errors.New("tiles do not match the checkpoint")
	// ErrBound: a checkpoint larger than the mirror keeps of one observer.
	ErrBound = errors.New("over the mirror's bound")
	// ErrStale: a source whose checkpoint is older than the one the mirror holds.
	ErrStale = errors.New("older than the mirrored checkpoint")
)

// SourceError is a source refused while mirroring an observer: what it served is not the
// observer's signed tree, and nothing of it was kept.
type SourceError struct {
	Observer string // did:key
	Source   string
	Reason   error // one of the Err values above
	Detail   error
}

func (e *SourceError) Error() string {
	if e.Detail == nil {
		return fmt.Sprintf("mirroring %s from %s: %v", e.Observer, e.Source, e.Reason)
	}
	return fmt.Sprintf("mirroring %s from %s: %v: %v", e.Observer, e.Source, e.Reason, e.Detail)
}

func (e *SourceError) Unwrap() []error { return []error{e.Reason, e.Detail} }

// ForkError is two checkpoints of one observer, both signed, that cannot be one tree. Bundle
// is the self-contained evidence (format.Equivocation's encoding); the mirror keeps the
// checkpoint it had and follows that observer no further.
type ForkError struct {
	Observer string
	Bundle   []byte
	Detail   string
}

func (e *ForkError) Error() string {
	return fmt.Sprintf("observer %s forked its log: %s", e.Observer, e.Detail)
}

// reasonName is the metric label of a refusal reason.
func reasonName(err error) string {
	for _, r := range []struct {
		err  error
		name string
	}{{ErrSignature, "signature"}, {ErrMalformed, "malformed"}, {ErrOversized, "oversized"},
		{ErrTruncated, "truncated"}, {ErrMismatch, "mismatch"}, {ErrBound, "bound"}, {ErrStale, "stale"}} {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return "unavailable"
}
