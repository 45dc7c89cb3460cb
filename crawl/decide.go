package crawl

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/histor-observer/histor/crawl/diff"
	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/crawl/state"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/clip"
)

// This file is the one place that decides what an attempt at a target
// leads to: which labels over which inputs, which evidence, which change
// record, and the target's next state. decide is pure (no clock, no I/O, no
// randomness); signing, appending and storing come after it, in process and
// the committer.

// settings are the crawl's fixed settings a decision reads. One value per
// crawl, shared read-only by every worker.
type settings struct {
	gap      time.Duration // Config.ContinuityGap
	regURN   string        // the descriptor's server.registry
	patterns *scan.PatternSet
	records  *scan.RecordSet
	sets     string          // pattern-set digest | record-set digest
	index    *scan.NameIndex // this crawl's registry names, for lookalikes
	limits   scan.Limits
}

// attempt is what one attempt at a target showed.
type attempt struct {
	status, detail string
	// For an ok attempt: the subject MTL/1 makes of the tools, the tools and
	// instructions as sent, and serverInfo's name and version.
	subject       *subject
	tools         []any
	instructions  *string
	serverName    string
	serverVersion string
}

// attemptOf turns an observation (and, when ok, its subject) into an attempt.
func attemptOf(obs *mcpclient.Observation, subj *subject) attempt {
	a := attempt{status: obs.Status, detail: obs.Detail}
	if obs.Status == mcpclient.StatusOK {
		a.subject, a.tools, a.instructions = subj, obs.Tools, obs.Instructions
		a.serverName = serverInfoText(obs.ServerInfo, "name")
		a.serverVersion = serverInfoText(obs.ServerInfo, "version")
	}
	return a
}

// maxServerInfoBytes bounds serverInfo.name and .version as the state keeps
// them (HISTOR keeps 200 and 100 characters).
const maxServerInfoBytes = 200

func serverInfoText(info map[string]any, key string) string {
	s, _ := info[key].(string)
	return clip.String(s, maxServerInfoBytes)
}

// decision is everything decide reads.
type decision struct {
	target registry.Target
	// prev is the target's state as the crawl began; before its first
	// attempt, a zero Observation with its TargetID.
	prev *state.Observation
	seen attempt
	now  time.Time // the attempt's time, whole seconds, UTC
	// prevTools is the tool set stored at prev.ToolSetDigest, set when an
	// earlier decide asked for it (outcome.needTools); nil otherwise.
	prevTools []any
	// prevNames is toolSet.names of the descriptor stored at prev.Subject,
	// set (never nil, if empty) when an earlier decide asked for it
	// (outcome.needNames); nil otherwise.
	prevNames []string
}

// plannedLabel is one label decide wants issued.
type plannedLabel struct {
	method string
	in     awr.LabelInput // complete but for ID, IssuerDID and IssuedAt
	// link says the label becomes the last link of the target's chain (the
	// prior of its next continuity label): the first observation label, and
	// each continuity label over an ok attempt.
	link bool
}

// outcome is what decide decided.
type outcome struct {
	// needTools, when set, is the digest of the stored tool set the decision
	// needs (for a change record or a re-scan): load it into
	// decision.prevTools and decide again. Nothing else is set.
	needTools string
	// needNames, when set, is the subject digest of the stored descriptor
	// whose tool names a names-only change record needs: load them into
	// decision.prevNames and decide again. Nothing else is set.
	needNames string
	status    string // the target's status after this attempt
	labels    []plannedLabel
	evidence  []hlog.Evidence
	// change is the change record, if the tool-set digest moved; its LabelID
	// is the continuity label issued with it, filled in once signed.
	change *state.Change
	// next is the target's next state, nil when the attempt writes none (a
	// target never dialled). Its Labels and Anchor are completed from the
	// signed labels.
	next *state.Observation
}

// decide decides what one attempt at a target leads to.
func decide(s *settings, d decision) (outcome, error) {
	if d.target.Skip != "" {
		// Never dialled (templated URL, opt-out): a status, no attempt.
		return outcome{status: d.target.Skip}, nil
	}
	if need := neededTools(s, d); need != "" && d.prevTools == nil {
		return outcome{needTools: need}, nil
	}
	if need := neededNames(d); need != "" && d.prevNames == nil {
		return outcome{needNames: need}, nil
	}
	next := *d.prev
	next.Status, next.Detail, next.ObservedAt = d.seen.status, d.seen.detail, d.now
	next.Attempts++
	out := outcome{status: d.seen.status, next: &next}
	var err error
	if d.seen.status == mcpclient.StatusOK {
		err = decideOK(s, d, &out)
	} else {
		decideUnreachable(s, d, &out)
	}
	if err != nil {
		return outcome{}, err
	}
	next.Span = nextSpan(d.prev.Span, d.target.ID, &next, d.seen, d.now)
	return out, nil
}

// neededTools is the digest of the stored tool set a decision over d reads,
// "" if none: the previous set of a change between two digested sets, or
// the set a new pattern or record set re-scans while the target does not
// answer.
func neededTools(s *settings, d decision) string {
	p := d.prev
	if p.ToolSetDigest == "" {
		return ""
	}
	if d.seen.status != mcpclient.StatusOK {
		if p.Subject != "" && p.Sets != s.sets {
			return p.ToolSetDigest
		}
		return ""
	}
	if changed(p, d.seen.subject) && d.seen.subject.digest != "" {
		return p.ToolSetDigest
	}
	return ""
}

// neededNames is the subject digest of the stored descriptor whose tool
// names a decision over d reads, "" if none: the previous subject of a
// change from or to a set without a digest, which HISTOR records by names
// alone.
func neededNames(d decision) string {
	p, subj := d.prev, d.seen.subject
	if d.seen.status != mcpclient.StatusOK || !changed(p, subj) || (p.ToolSetDigest != "" && subj.digest != "") {
		return ""
	}
	return p.Subject
}

// changed says whether subj, after prev's subject, is a change of
// definitions: a new subject with another (or no) tool-set digest. A new
// subject over the same digest (the registry or the endpoint moved) is not.
func changed(prev *state.Observation, subj *subject) bool {
	return prev.Subject != "" && subj.sri != prev.Subject && (subj.digest == "" || subj.digest != prev.ToolSetDigest)
}

// decideOK decides an attempt that read a tool list: a new subject gets its
// observation label and evidence; a new subject or a new pattern or record
// set gets scan labels; the chain gets a continuity label once the gap has
// passed; a change of definitions gets a change record.
func decideOK(s *settings, d decision, out *outcome) error {
	prev, next, subj := d.prev, out.next, d.seen.subject
	newSubject := subj.sri != prev.Subject
	in := baseInput(s, d.target, subj, d.now)
	if newSubject {
		out.evidence = append(out.evidence, hlog.Evidence{Kind: hlog.EvidenceDescriptors, Body: subj.descJCS})
		if subj.digest != "" {
			out.evidence = append(out.evidence, hlog.Evidence{Kind: hlog.EvidenceToolSets, Body: subj.toolSet})
		}
		out.labels = append(out.labels, plannedLabel{method: awr.MethodObservation, in: in, link: prev.Anchor == nil})
		next.BlockMatches, next.AdviseMatches, next.RecordMatches = 0, 0, 0
	}
	if len(d.seen.tools) > 0 && (newSubject || prev.Sets != s.sets) {
		scanLabels(s, out, scanned{target: d.target, in: in, tools: d.seen.tools, instructions: d.seen.instructions})
	}
	// A package version that only moved the version: MTL/1 compares
	// subjects, which name the version, so a continuity label here would
	// say definitions changed that did not. The new version gets its own
	// observation; continuity waits for a version with other tools.
	versionOnly := d.target.Sandboxed() && newSubject && subj.digest != "" && subj.digest == prev.ToolSetDigest
	if a := prev.Anchor; a != nil && !versionOnly && d.now.Sub(a.ObservedAt) >= s.gap {
		c := in
		c.Prior = prior(a)
		if !newSubject {
			c.UnchangedSince = prev.UnchangedSince
		}
		out.labels = append(out.labels, plannedLabel{method: awr.MethodContinuity, in: c, link: true})
	}
	if changed(prev, subj) {
		ch, err := changeRecord(d, subj)
		if err != nil {
			return err
		}
		out.change = ch
		next.Changes++
	}
	settle(next, d, newSubject && !versionOnly, s.limits.BytesPerText)
	return nil
}

// settle records an ok attempt's subject in the next state.
func settle(next *state.Observation, d decision, newSubject bool, perText int) {
	subj := d.seen.subject
	if newSubject {
		next.UnchangedSince = d.now
	}
	next.Subject, next.SubjectURN, next.ToolSetDigest = subj.sri, subj.urn, subj.digest
	next.ToolCount, next.LastOK, next.StretchReported = subj.desc.ToolSet.Count, d.now, false
	next.Instructions, next.InstructionsClipped = storedInstructions(d.seen.instructions, perText)
	next.ServerName, next.ServerVersion = d.seen.serverName, d.seen.serverVersion
	next.Refusal = ""
	if subj.refusal != nil {
		next.Refusal = subj.refusal.Code
	}
	// HISTOR counts an ok observation, and pins its first, only when the
	// tools made a subject of their own (a digest, or none by MTL-NUM-001);
	// a set MTL/1 refuses outright (names-only descriptor) is neither.
	if !subj.namesOnly {
		next.OKObservations++
		if next.FirstPinned.IsZero() {
			next.FirstPinned = d.now
		}
	}
}

// decideUnreachable decides an attempt that read no tool list: the first
// failure at least the gap after the last link of the chain gets one
// inconclusive continuity label for the whole unreachable stretch (two
// continuity observations are ≥ 20 h apart by MTL/1, so a shorter blip
// gets none), and a new pattern or record set still re-issues the scan
// labels of the current subject from its stored tool set.
func decideUnreachable(s *settings, d decision, out *outcome) {
	prev, next := d.prev, out.next
	if a := prev.Anchor; a != nil && !prev.StretchReported && d.now.Sub(a.ObservedAt) >= s.gap {
		out.labels = append(out.labels, plannedLabel{method: awr.MethodContinuity, in: awr.LabelInput{
			ObservedAt: d.now,
			Subject:    awr.Ref{ID: a.SubjectURN, DigestSRI: a.SubjectDigestSRI},
			ToolSet:    awr.ToolSet{Count: 0},
			Server:     awr.Server{Name: d.target.Name, Registry: s.registryOf(d.target)},
			Reasons:    []awr.Reason{{Code: "HISTOR-UNREACHABLE-001", Detail: "no tool list was read: status " + d.seen.status}},
			Prior:      prior(a),
		}})
		next.StretchReported = true
	}
	if prev.Subject == "" || prev.ToolSetDigest == "" || prev.Sets == s.sets {
		return
	}
	in := awr.LabelInput{
		ObservedAt: prev.LastOK,
		Subject:    awr.Ref{ID: prev.SubjectURN, DigestSRI: prev.Subject},
		ToolSet:    awr.ToolSet{Count: prev.ToolCount, DigestSRI: prev.ToolSetDigest},
		Server:     awr.Server{Name: d.target.Name, Registry: s.registryOf(d.target)},
	}
	scanLabels(s, out, scanned{target: d.target, in: in, tools: d.prevTools, instructions: prev.Instructions, clipped: prev.InstructionsClipped})
}

// baseInput is the label input every label over subj shares.
func baseInput(s *settings, t registry.Target, subj *subject, now time.Time) awr.LabelInput {
	in := awr.LabelInput{
		ObservedAt: now,
		Subject:    awr.Ref{ID: subj.urn, DigestSRI: subj.sri},
		ToolSet:    awr.ToolSet{Count: subj.desc.ToolSet.Count, DigestSRI: subj.digest},
		Server:     awr.Server{Name: t.Name, Registry: s.registryOf(t)},
	}
	if r := subj.refusal; r != nil {
		in.Reasons = []awr.Reason{{Code: r.Code, Detail: reasonDetail(r.Reason, r.Code)}}
	}
	return in
}

func prior(a *state.Anchor) *awr.PriorLabel {
	return &awr.PriorLabel{ID: a.LabelID, DigestSRI: a.LabelSRI, ObservedAt: a.ObservedAt,
		SubjectDigestSRI: a.SubjectDigestSRI, ToolSetDigest: a.ToolSetDigest}
}

// changeRecord records what moved between the previous tool set and this
// one: in full between two digested sets (prevTools), else, as HISTOR
// does, by the names of the two descriptors (prevNames).
func changeRecord(d decision, subj *subject) (*state.Change, error) {
	var c *diff.Change
	if d.prev.ToolSetDigest != "" && subj.digest != "" {
		c = diff.Compare(d.prevTools, d.seen.tools)
	} else {
		c = diff.CompareNames(d.prevNames, subj.desc.ToolSet.Names)
	}
	summary, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encoding change summary: %w", err)
	}
	t, prev := d.target, d.prev
	return &state.Change{
		ID: changeID(t.ID, prev.Subject, subj.sri, d.now), TargetID: t.ID, Name: t.Name, Endpoint: t.Endpoint,
		Before: prev.ToolSetDigest, After: subj.digest, FromSubject: prev.Subject, ToSubject: subj.sri,
		At: d.now, Summary: summary,
	}, nil
}

// nextSpan is the target's open timeline span after an attempt that left
// next: open extended when the attempt ended alike (same status, subject
// and tool-set digests), else a new span from now. A new value either way,
// so prev's span stays as it was.
func nextSpan(open *state.Span, targetID string, next *state.Observation, a attempt, now time.Time) *state.Span {
	sp := state.Span{TargetID: targetID, From: now, Status: next.Status, Detail: next.Detail}
	if a.subject != nil {
		sp.SubjectDigest, sp.ToolSetDigest, sp.ToolCount = a.subject.sri, a.subject.digest, a.subject.desc.ToolSet.Count
		sp.ServerName, sp.ServerVersion = a.serverName, a.serverVersion
	}
	if open != nil && open.Status == sp.Status && open.SubjectDigest == sp.SubjectDigest && open.ToolSetDigest == sp.ToolSetDigest {
		sp.From, sp.Count = open.From, open.Count
	}
	sp.Until = now
	sp.Count++
	return &sp
}

// failedState is the next state of a target our side failed on (its
// labels could not be built, signed or appended): its previous state with
// status internal-error, the attempt in its timeline, and nothing else
// changed. Like HISTOR, an attempt we could not process is not counted.
func failedState(prev *state.Observation, err error, now time.Time) *state.Observation {
	next := *prev
	next.Status, next.Detail, next.ObservedAt = StatusInternalError, mcpclient.ClipDetail(err.Error()), now
	next.Span = nextSpan(prev.Span, prev.TargetID, &next, attempt{}, now)
	return &next
}

// registryOf is the registry URN t's labels name: its own (a curated
// target, in histor's namespace) or the crawled registry's.
func (s *settings) registryOf(t registry.Target) string {
	if t.Registry != "" {
		return t.Registry
	}
	return s.regURN
}
