package audit

import "fmt"

// MisbehaviourError means the log failed a check: a forged head, a changed key, a shrink, a
// rewrite, a bad proof, a tampered label, tiles that disagree with the head.
type MisbehaviourError struct {
	// Check names what failed: "key", "signature", "consistency", "label", "tiles".
	Check string
	// Reason says what was seen, with the sizes and roots involved.
	Reason string
}

func (e *MisbehaviourError) Error() string {
	return fmt.Sprintf("the log misbehaved (%s): %s", e.Check, e.Reason)
}

func misbehaved(check, format string, args ...any) *MisbehaviourError {
	return &MisbehaviourError{Check: check, Reason: fmt.Sprintf(format, args...)}
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
