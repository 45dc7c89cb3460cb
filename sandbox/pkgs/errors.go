package pkgs

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/histor-observer/histor/sandbox"
)

// Error ends an observation with Status. Detail is the short text the
// Observation carries; Err, when set, is the cause.
type Error struct {
	Status sandbox.Status
	Detail string
	Err    error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Status, e.Detail, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Status, e.Detail)
}

func (e *Error) Unwrap() error { return e.Err }

func fail(st sandbox.Status, err error, format string, args ...any) *Error {
	return &Error{Status: st, Detail: fmt.Sprintf(format, args...), Err: err}
}

// StatusOf is the status err ends an observation with: the *Error's status,
// refused for a *SpecError, and inspection-failed (ours, never the
// package's) for anything else.
func StatusOf(err error) sandbox.Status {
	var e *Error
	var s *SpecError
	switch {
	case err == nil:
		return sandbox.StatusOK
	case errors.As(err, &e):
		return e.Status
	case errors.As(err, &s):
		return sandbox.StatusRefused
	}
	return sandbox.StatusInspectionFailed
}

// DetailOf is the Observation's detail for err.
func DetailOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Detail
	}
	if err == nil {
		return ""
	}
	return Tail(err.Error(), TailChars)
}

// TailChars bounds the tool output an Observation keeps, as HISTOR does.
const TailChars = 400

// Tail is the last n characters of text with control characters other than
// tab and newline turned into spaces (so no terminal escape survives),
// trimmed.
func Tail(text string, n int) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	text = strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f {
			return ' '
		}
		return r
	}, text)
	text = strings.TrimSpace(text)
	if c := utf8.RuneCountInString(text); c > n {
		for range c - n {
			_, size := utf8.DecodeRuneInString(text)
			text = text[size:]
		}
	}
	return text
}
