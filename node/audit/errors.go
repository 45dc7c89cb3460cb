package audit

import "fmt"

// MisbehaviourError means the log failed a check: a forged head, a changed key, a shrink, a
// rewrite, a bad proof, a tampered label, tiles that disagree with the head.
type MisbehaviourError struct {
	// Check names what failed: "key", "signature", "consistency", "label", "tiles".
	Check string
	// Reason says what was seen, with the sizes and roots involved.
	Reason string
	// Err is the evidence, when there is some beyond Reason: for two signed heads that are
	// not one tree, a *format.InconsistencyError holding both as served and the proof.
	Err error
}

func (e *MisbehaviourError) Error() string {
	return fmt.Sprintf("the log misbehaved (%s): %s", e.Check, e.Reason)
}

func (e *MisbehaviourError) Unwrap() error { return e.Err }

func misbehaved(check, format string, args ...any) *MisbehaviourError {
	return &MisbehaviourError{Check: check, Reason: fmt.Sprintf(format, args...)}
}

// forked is the misbehaviour of two signed heads that are not one tree; the reason is said
// for a reader, the evidence kept for whoever takes it further.
func forked(check string, inc error, reason string, args ...any) *MisbehaviourError {
	return &MisbehaviourError{Check: check, Reason: fmt.Sprintf(reason, args...), Err: inc}
}

// IncompleteError means the audit could not run to the end: the log was unreachable, answered
// with an error or with something unreadable, or the kept state could not be used. It is not
// evidence against the log.
type IncompleteError struct {
	// Step says what the auditor was doing.
	Step string
	Err  error
}

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("audit incomplete: %s: %v", e.Step, e.Err)
}

func (e *IncompleteError) Unwrap() error { return e.Err }

func incomplete(step string, err error) *IncompleteError {
	return &IncompleteError{Step: step, Err: err}
}
