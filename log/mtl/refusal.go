package mtl

import (
	"errors"
	"fmt"

	"github.com/histor-observer/histor/log/canon"
)

// Refusal codes.
const (
	CodeNotTool   = "MTL-SUBJ-001"
	CodeEmpty     = "MTL-SUBJ-002"
	CodeDuplicate = "MTL-SUBJ-003"
	CodeNumber    = "MTL-NUM-001"
	CodeInput     = "HISTOR-INPUT-001"
)

// Refusal is MTL/1 declining to digest a tool set or build a descriptor.
type Refusal struct {
	Code   string
	Reason string
	Tool   string // the tool the refusal is about, when there is one
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Reason }

func refuse(code, tool, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Tool: tool, Reason: fmt.Sprintf(format, args...)}
}

// Code returns the reason code of an error from this package: a Refusal's
// code, or a canon refusal's AWR-CANON code; "" for anything else.
func Code(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Code
	}
	var ce *canon.Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ""
}
