package canon

import (
	"errors"
	"fmt"
)

// Refusal codes; see the package comment for their meaning.
const (
	CodeNonInteger = "AWR-CANON-001"
	CodeOutOfRange = "AWR-CANON-002"
	CodeUnicode    = "AWR-CANON-003"
	CodeDuplicate  = "AWR-CANON-004"
	CodeSyntax     = "AWR-CANON-005"
	CodeMismatch   = "AWR-CANON-006"
	CodeLimit      = "AWR-CANON-007"
)

// Error is a refusal of the input. Code is one of the Code* constants, so a
// caller can tell a refused number from a syntax error without reading Reason.
type Error struct {
	Code   string
	Offset int // byte offset in the input where the refusal was detected
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s at byte %d", e.Code, e.Reason, e.Offset)
}

// IsNumberRefusal reports whether err is a canon refusal of a number literal
// (AWR-CANON-001 or -002); MTL/1 reports those as MTL-NUM-001.
func IsNumberRefusal(err error) bool {
	var ce *Error
	if !errors.As(err, &ce) {
		return false
	}
	return ce.Code == CodeNonInteger || ce.Code == CodeOutOfRange
}

func refuse(code string, off int, format string, args ...any) *Error {
	return &Error{Code: code, Offset: off, Reason: fmt.Sprintf(format, args...)}
}
