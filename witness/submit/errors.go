package submit

import (
	"errors"
	"fmt"
)

// ErrStale is wrapped when a checkpoint is not submitted because a larger one of the same
// log has been already: witnesses only move forward, so the smaller one has nothing to add.
var ErrStale = errors.New("a larger checkpoint has been submitted already")

// InconsistencyError says a witness found the checkpoint inconsistent with the one it
// cosigned last: a consistency proof that does not verify (422), a conflict that is not
// about the old size (409 without text/x.tlog.size, as tlog-witness v1.0.0 answers the
// same size with another root), or a 409 naming a size beyond the checkpoint's. Either the witness saw a different tree of this log
// or our proof is wrong; both need a person, so it is never retried. It keeps what was
// sent, so the exchange can be replayed.
type InconsistencyError struct {
	Witness    string     // the witness's key name
	URL        string     // its submission prefix
	Status     int        // 409 or 422
	Body       string     // its answer, clipped
	Old        uint64     // the size this request said the witness had cosigned
	Proof      [][32]byte // the consistency proof from Old sent with it
	Checkpoint []byte     // the signed checkpoint submitted
}

func (e *InconsistencyError) Error() string {
	return fmt.Sprintf("witness %s (%s) answered %d to old size %d: the checkpoint is inconsistent with what it cosigned: %q",
		e.Witness, e.URL, e.Status, e.Old, e.Body)
}

// StatusError is a witness's refusal that retrying cannot change: 400, 403, 404, another
// 4xx, a redirect, a second 409 with text/x.tlog.size, or one naming the size just sent.
type StatusError struct {
	Witness string
	URL     string
	Status  int
	Body    string // its answer, clipped
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("witness %s (%s) refused the checkpoint: %d %q", e.Witness, e.URL, e.Status, e.Body)
}

// AnswerError is a 200 answer that cannot be used: malformed, without a cosignature by the
// witness's key, or with a line claiming its key that does not verify.
type AnswerError struct {
	Witness string
	URL     string
	Reason  string
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("witness %s (%s) answered with no usable cosignature: %s", e.Witness, e.URL, e.Reason)
}

// UnavailableError says every attempt failed in a way retrying might fix (a network
// error, a timeout, 5xx, 429); Err is the last attempt's.
type UnavailableError struct {
	Witness  string
	URL      string
	Attempts int
	Err      error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("witness %s (%s) unavailable after %d attempts: %v", e.Witness, e.URL, e.Attempts, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }
