package crawl

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
)

// ReasonScanTruncated makes a pattern-scan label inconclusive when a bound of
// the scan (bytes per text, per tool or in all; matches) stopped it.
const ReasonScanTruncated = "HISTOR-SCAN-001"

// scanTruncated is the reason of a scan label a bound cut short.
var scanTruncated = awr.Reason{Code: ReasonScanTruncated, Detail: "a scan bound was reached: some text went unscanned or some matches were not listed"}

// instructionsTool stands in the label's "tool" member for a match in the
// server's instructions, which belong to no tool; MTL/1 requires the member.
const instructionsTool = "(instructions)"

// scanned is what the scan labels of one subject read.
type scanned struct {
	target       registry.Target
	in           awr.LabelInput // the subject's label input; its reasons are not carried over
	tools        []any
	instructions *string
	// clipped says instructions are a stored prefix of longer ones, so the
	// scan counts as truncated.
	clipped bool
}

// scanLabels plans the pattern-scan label over the tools and instructions
// and the name-threat label over the server name, and counts their matches
// in out.next.
func scanLabels(s *settings, out *outcome, sc scanned) {
	ps, rs := s.patterns, s.records
	scanIn := sc.in
	scanIn.Reasons = nil
	scanIn.PatternSet = awr.Ref{ID: ps.ID(), DigestSRI: ps.Digest()}
	res := scan.ScanWith(ps, sc.tools, sc.instructions, s.limits)
	if res.Truncated || sc.clipped {
		scanIn.Reasons = []awr.Reason{scanTruncated}
	}
	next := out.next
	next.BlockMatches, next.AdviseMatches = 0, 0
	for _, m := range res.Matches {
		tool := m.Tool
		if tool == "" {
			tool = instructionsTool
		}
		scanIn.PatternMatches = append(scanIn.PatternMatches, awr.PatternMatch{
			Code: m.Code, Severity: m.Severity, Tier: m.Tier, Tool: tool, Where: m.Where,
		})
		switch m.Tier {
		case scan.TierBlock:
			next.BlockMatches++
		case scan.TierAdvise:
			next.AdviseMatches++
		}
	}
	nameIn := sc.in
	nameIn.Reasons = nil
	nameIn.RecordSet = awr.Ref{ID: rs.ID(), DigestSRI: rs.Digest()}
	for _, m := range s.index.Match(rs, sc.target.Name) {
		nameIn.RecordMatches = append(nameIn.RecordMatches, awr.RecordMatch{
			Code: nameCode(m.Kind), Severity: nameSeverity(m.Kind), Pattern: m.Name, Field: "server.name",
		})
	}
	next.RecordMatches = len(nameIn.RecordMatches)
	next.Sets = s.sets
	out.labels = append(out.labels,
		plannedLabel{method: awr.MethodPatternScan, in: scanIn},
		plannedLabel{method: awr.MethodNameThreat, in: nameIn})
}

// nameCode is the reason code a name match carries in a label.
func nameCode(kind string) string {
	return "NAME-" + strings.ToUpper(kind)
}

// nameSeverity ranks name matches: a listed threat above a lookalike of
// one, above a lookalike of an ordinary registry name.
func nameSeverity(kind string) string {
	switch kind {
	case scan.KindThreatRecord:
		return "high"
	case scan.KindThreatLookalike:
		return "medium"
	default:
		return "low"
	}
}

// changeID is a short stable id: the same change seen twice gets one id.
func changeID(target, from, to string, at time.Time) string {
	h := sha256.Sum256([]byte(target + "\n" + from + "\n" + to + "\n" + at.Format(time.RFC3339)))
	return hex.EncodeToString(h[:8])
}

// toolsOf parses a stored canonical tool set.
func toolsOf(body []byte) ([]any, error) {
	v, err := canon.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("parsing stored tool set: %w", err)
	}
	tools, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("stored tool set is not an array")
	}
	return tools, nil
}

// namesOf reads toolSet.names from a stored canonical subject descriptor.
func namesOf(body []byte) ([]string, error) {
	v, err := canon.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("parsing stored descriptor: %w", err)
	}
	desc, _ := v.(map[string]any)
	ts, _ := desc["toolSet"].(map[string]any)
	list, ok := ts["names"].([]any)
	if !ok {
		return nil, fmt.Errorf("stored descriptor has no toolSet.names")
	}
	names := make([]string, 0, len(list))
	for _, n := range list {
		s, ok := n.(string)
		if !ok {
			return nil, fmt.Errorf("stored descriptor has a tool name that is not a string")
		}
		names = append(names, s)
	}
	return names, nil
}

// MaxLabelBytes bounds one signed label, well under the 64 KiB a C2SP entry
// may hold: labels cite their evidence by SRI and stay small. Only the
// matches a hostile tool set can multiply (many tools, long names) reach it.
const MaxLabelBytes = 32 << 10

// signFitting signs in as a label of method. A label over MaxLabelBytes
// lists fewer matches, halving until it fits: a scan label then carries
// HISTOR-SCAN-001 ("some matches were not listed") and stays inconclusive;
// a name-threat label keeps at least one match, so it stays inconclusive
// too. As a last resort every reason keeps its code but its detail becomes
// detailWithheld. A label that cannot fit is an error naming its size.
func (c *Crawler) signFitting(method string, in *awr.LabelInput) (signed []byte, verdict string, err error) {
	for {
		signed, verdict, err := c.signLabel(method, *in)
		if err != nil || len(signed) <= MaxLabelBytes {
			return signed, verdict, err
		}
		switch {
		case len(in.PatternMatches) > 0:
			in.PatternMatches = in.PatternMatches[:len(in.PatternMatches)/2]
			if !slices.ContainsFunc(in.Reasons, func(r awr.Reason) bool { return r.Code == ReasonScanTruncated }) {
				in.Reasons = append(slices.Clip(in.Reasons), scanTruncated)
			}
		case len(in.RecordMatches) > 1:
			in.RecordMatches = in.RecordMatches[:len(in.RecordMatches)/2]
		case detailsLeft(in.Reasons):
			in.Reasons = withoutDetails(in.Reasons)
		default:
			return nil, "", fmt.Errorf("%s label is %d bytes, over the %d-byte bound, with nothing left to shorten", method, len(signed), MaxLabelBytes)
		}
	}
}

// signLabel builds and signs one label, returning the verdict the method's
// rules gave it with the signed bytes.
func (c *Crawler) signLabel(method string, in awr.LabelInput) ([]byte, string, error) {
	doc, err := awr.BuildLabel(method, in)
	if err != nil {
		return nil, "", fmt.Errorf("issuing label: %w", err)
	}
	verdict, _ := doc["credentialSubject"].(map[string]any)["verdict"].(string)
	signed, err := awr.Sign(doc, c.key, in.IssuedAt)
	if err != nil {
		return nil, "", fmt.Errorf("issuing label: %w", err)
	}
	return signed, verdict, nil
}

// detailWithheld replaces the details of a label's reasons when nothing else
// shortened it enough; the codes still say what each reason is.
const detailWithheld = "detail withheld: the label would exceed its size bound"

// detailsLeft reports whether some reason still has a detail other than
// detailWithheld.
func detailsLeft(rs []awr.Reason) bool {
	return slices.ContainsFunc(rs, func(r awr.Reason) bool { return r.Detail != detailWithheld })
}

// withoutDetails is rs with every detail replaced by detailWithheld; a new
// slice, so the caller's reasons stay as they were.
func withoutDetails(rs []awr.Reason) []awr.Reason {
	out := make([]awr.Reason, len(rs))
	for i, r := range rs {
		out[i] = awr.Reason{Code: r.Code, Detail: detailWithheld}
	}
	return out
}
