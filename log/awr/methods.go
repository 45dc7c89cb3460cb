package awr

import (
	"fmt"

	"github.com/histor-observer/histor/log/mtl"
)

// Scope sentences. Each travels inside the signature and says what the
// method looked at and what it does not claim (PROFILE §6.3).
const (
	scopeObservation = "At observedAt this server advertised the %d tool definitions whose MTL/1 canonical " +
		"digest is toolSet.digestSRI, over the endpoint named in the subject descriptor. That is the whole " +
		"claim: no tool was invoked, no source code was read and no package was inspected."
	scopeObservationNoDigest = "At observedAt this server answered tools/list, but its tool definitions could " +
		"not be given an MTL/1 digest, for the reasons listed in reasons. The count is recorded; no digest is claimed."
	scopeScan = "The tool names, descriptions and JSON schemas this server advertised at observedAt were " +
		"matched against the pattern set named by patternSet. A match marks a definition worth reading; it is " +
		"not a finding. No tool was invoked, no source code was read and no package was inspected."
	scopeContinuitySame = "The subject digest observed at observedAt is the subject digest of priorLabel: " +
		"the advertised tool definitions were the same at both observations. Nothing is said about the time " +
		"between them, or about behaviour."
	scopeContinuityChanged = "The subject digest observed at observedAt differs from the subject digest of " +
		"priorLabel: the advertised tool definitions changed between the two observations. A change is not " +
		"an accusation; a new version changes definitions too."
	scopeContinuityNone = "The two observations could not be compared (%s). Nothing is said about whether " +
		"the advertised tool definitions changed."
	scopeNameThreat = "The server's registry name and endpoint were compared with the record set named by " +
		"recordSet. Tool definitions were not examined by this method. A match means a name resembles a " +
		"listed one; it is not evidence about code. The record set is not claimed to be current at observedAt."
)

// A builder turns inputs into a verdict, the method's mcpTrustLabel
// members and the evidence the method requires.
type builder func(in LabelInput) (verdict string, detail map[string]any, evidence []any, err error)

var builders = map[string]builder{
	MethodObservation: buildObservation,
	MethodPatternScan: buildPatternScan,
	MethodContinuity:  buildContinuity,
	MethodNameThreat:  buildNameThreat,
}

// buildObservation: pass when the tool set was digested; inconclusive,
// with reasons, when it was not (PROFILE §7.2). Never fail.
func buildObservation(in LabelInput) (string, map[string]any, []any, error) {
	if len(in.Reasons) > 0 {
		d := baseDetail(in, scopeObservationNoDigest)
		d["reasons"] = reasonsJSON(in.Reasons)
		return VerdictInconclusive, d, baseEvidence(in), nil
	}
	if in.ToolSet.DigestSRI == "" {
		return "", nil, nil, inputErr("an observation without a tool-set digest needs reasons")
	}
	d := baseDetail(in, fmt.Sprintf(scopeObservation, in.ToolSet.Count))
	return VerdictPass, d, baseEvidence(in), nil
}

// buildPatternScan: pass iff nothing matched and the whole text was scanned,
// otherwise inconclusive with every match and its tier (PROFILE §7.3), and
// with reasons when a bound stopped the scan: a label never passes over text
// that was not read. Never fail.
func buildPatternScan(in LabelInput) (string, map[string]any, []any, error) {
	if err := checkSetRef("patternSet", in.PatternSet); err != nil {
		return "", nil, nil, err
	}
	matches := make([]any, 0, len(in.PatternMatches))
	for _, m := range in.PatternMatches {
		if m.Code == "" || m.Tier == "" || m.Tool == "" || m.Where == "" {
			return "", nil, nil, inputErr("pattern match needs code, tier, tool and where")
		}
		matches = append(matches, map[string]any{
			"code": m.Code, "severity": m.Severity, "tier": m.Tier, "tool": m.Tool, "where": m.Where,
		})
	}
	d := baseDetail(in, scopeScan)
	d["patternSet"] = in.PatternSet.json()
	d["patternMatches"] = matches
	if len(in.Reasons) > 0 {
		d["reasons"] = reasonsJSON(in.Reasons)
	}
	ev := append(baseEvidence(in), evidenceEntry("mtl-pattern-set", in.PatternSet.DigestSRI))
	return passUnless(len(matches) > 0 || len(in.Reasons) > 0), d, ev, nil
}

// buildNameThreat: pass iff no record matched, otherwise inconclusive
// (PROFILE §7.5). Never fail.
func buildNameThreat(in LabelInput) (string, map[string]any, []any, error) {
	if err := checkSetRef("recordSet", in.RecordSet); err != nil {
		return "", nil, nil, err
	}
	matches := make([]any, 0, len(in.RecordMatches))
	for _, m := range in.RecordMatches {
		if m.Code == "" || m.Field == "" {
			return "", nil, nil, inputErr("record match needs code and field")
		}
		matches = append(matches, map[string]any{
			"code": m.Code, "severity": m.Severity, "pattern": m.Pattern, "field": m.Field,
		})
	}
	d := baseDetail(in, scopeNameThreat)
	d["recordSet"] = in.RecordSet.json()
	d["recordMatches"] = matches
	ev := []any{
		evidenceEntry("mtl-subject-descriptor", in.Subject.DigestSRI),
		evidenceEntry("mtl-record-set", in.RecordSet.DigestSRI),
	}
	return passUnless(len(matches) > 0), d, ev, nil
}

func passUnless(matched bool) string {
	if matched {
		return VerdictInconclusive
	}
	return VerdictPass
}

// buildContinuity compares the subject digest with the prior label's
// (PROFILE §7.4): pass when equal, fail when different, inconclusive when
// either side has no tool-set digest.
func buildContinuity(in LabelInput) (string, map[string]any, []any, error) {
	p := in.Prior
	if p == nil || p.ID == "" || !mtl.ValidSRI(p.DigestSRI) || p.ObservedAt.IsZero() ||
		!mtl.ValidSRI(p.SubjectDigestSRI) {
		return "", nil, nil, inputErr("continuity needs the prior label's id, digest, observedAt and subject digest (MTL-CONT-001)")
	}
	d := baseDetail(in, "")
	d["priorLabel"] = map[string]any{"id": p.ID, "digestSRI": p.DigestSRI, "observedAt": FormatTime(p.ObservedAt)}
	ev := []any{
		evidenceEntry("mtl-subject-descriptor", in.Subject.DigestSRI),
		map[string]any{"kind": "mtl-prior-label", "id": p.ID, "digestSRI": p.DigestSRI},
	}
	var verdict string
	switch {
	case in.ToolSet.DigestSRI == "" || p.ToolSetDigest == "":
		verdict = VerdictInconclusive
		reasons := in.Reasons
		if len(reasons) == 0 {
			reasons = []Reason{{Code: "MTL-NUM-001", Detail: "one of the two tool sets is not digestible"}}
		}
		d["scope"] = fmt.Sprintf(scopeContinuityNone, "a side has no tool-set digest, "+reasons[0].Code)
		d["reasons"] = reasonsJSON(reasons)
	case in.Subject.DigestSRI == p.SubjectDigestSRI:
		verdict = VerdictPass
		d["scope"] = scopeContinuitySame
		since := in.UnchangedSince
		if since.IsZero() {
			since = p.ObservedAt
		}
		d["unchangedSince"] = FormatTime(since)
	default:
		verdict = VerdictFail
		d["scope"] = scopeContinuityChanged
	}
	return verdict, d, ev, nil
}
