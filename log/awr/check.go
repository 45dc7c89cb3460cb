package awr

import (
	"fmt"
	"slices"
)

// CheckLabel applies the MTL/1 label rules (PROFILE §6, §7.1) to a
// document Verify accepted: it is a VerificationVerdict and MCPTrustLabel,
// names a registered method, carries a verdict that method allows, carries
// no score, and says profile MTL/1 with deterministic reproducibility.
func CheckLabel(v *Verified) error {
	if !slices.Contains(v.Types, LabelType) || !slices.Contains(v.Types, VerdictDoc) {
		return formatErr("MTL-DOC-001", "type must include %s and %s", VerdictDoc, LabelType)
	}
	cs, _ := v.Document["credentialSubject"].(map[string]any)
	method, _ := cs["method"].(map[string]any)
	id, _ := method["id"].(string)
	allowed, ok := AllowedVerdicts[id]
	if !ok {
		return formatErr("MTL-METH-001", "method %q is not an MTL/1 label method", quoted(id))
	}
	if verdict, _ := cs["verdict"].(string); !slices.Contains(allowed, verdict) {
		return formatErr(CodeVerdictInvalid, "verdict %q is not permitted for %s", quoted(verdict), id)
	}
	if _, ok := cs["score"]; ok {
		return formatErr("MTL-DOC-003", "a label must not carry a score")
	}
	label, _ := cs["mcpTrustLabel"].(map[string]any)
	if label["profile"] != "MTL/1" || label["reproducibility"] != "deterministic" {
		return formatErr("MTL-OPIN-001", "mcpTrustLabel must say profile MTL/1 and reproducibility deterministic")
	}
	return nil
}

// VerifyLabel is Verify followed by CheckLabel.
func VerifyLabel(signed []byte) (*Verified, error) {
	v, err := Verify(signed)
	if err != nil {
		return nil, err
	}
	if err := CheckLabel(v); err != nil {
		return nil, fmt.Errorf("checking label %s: %w", v.ID, err)
	}
	return v, nil
}
