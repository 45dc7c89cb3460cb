package crawl

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/crawl/state"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/mtl"
)

// StatusInternalError is the status of a target our side failed on (its
// labels could not be issued or appended); the summary counts it there too,
// whatever the server answered.
const StatusInternalError = "internal-error"

// crawlJob is what every target of one crawl shares.
type crawlJob struct {
	c     *Crawler
	index *scan.NameIndex // registry names, for lookalikes
	sets  string          // pattern-set digest | record-set digest
	// prev is every target's observation as the crawl began, read in one
	// scan rather than one lookup per target; read-only during the crawl,
	// and each target is processed once per crawl.
	prev map[string]*state.Observation
}

// prepared is one target's outcome, ready to be appended and committed.
type prepared struct {
	status   string
	entries  []hlog.Entry
	evidence []hlog.Evidence
	methods  []string // of the labels in entries
	update   state.Update
	err      error // our own failure on this target, never the server's
}

// skipped records a target that is never dialled (templated URL, opt-out).
func (j *crawlJob) skipped(t registry.Target) *prepared {
	now := j.c.now()
	return &prepared{status: t.Skip, update: state.Update{
		Target: &state.Target{Target: t, Status: t.Skip, LastCrawled: now},
	}}
}

// process turns one observation into labels, evidence and the target's new
// state. A failure of ours is logged and recorded against the target; it
// never ends the crawl.
func (j *crawlJob) process(ctx context.Context, t registry.Target, obs *mcpclient.Observation) *prepared {
	now := j.c.now()
	p := &prepared{status: obs.Status}
	prev := j.prev[t.ID]
	if prev == nil {
		prev = &state.Observation{TargetID: t.ID}
	}
	cur := *prev
	cur.Status, cur.Detail, cur.ObservedAt = obs.Status, obs.Detail, now
	var err error
	if obs.Status == mcpclient.StatusOK {
		err = j.observed(p, t, obs, prev, &cur, now)
	} else {
		err = j.unreachable(ctx, p, t, prev, &cur, now)
	}
	if err != nil {
		j.c.logger.Error("processing target", "id", t.ID, "endpoint", t.Endpoint, "error", err)
		p.entries, p.evidence, p.methods, p.update.Change = nil, nil, nil, nil
		p.err, p.status = err, StatusInternalError
		cur = *prev
		cur.Status, cur.Detail, cur.ObservedAt = StatusInternalError, clipText(err.Error(), mcpclient.MaxDetailBytes), now
	}
	cur.Labels = labelIDs(prev.Labels, p)
	p.update.Target = &state.Target{Target: t, Status: cur.Status, Detail: cur.Detail, LastCrawled: now}
	p.update.Observation = &cur
	return p
}

// observed handles an ok observation: subject, labels, chain, change record.
func (j *crawlJob) observed(p *prepared, t registry.Target, obs *mcpclient.Observation, prev, cur *state.Observation, now time.Time) error {
	subj, err := buildSubject(t, j.c.regURN, obs.Tools)
	if err != nil {
		return err
	}
	newSubject := subj.sri != prev.Subject
	in := j.base(t, subj, now)
	var obsAnchor *state.Anchor
	if newSubject {
		p.evidence = append(p.evidence, hlog.Evidence{Kind: hlog.EvidenceDescriptors, Body: subj.descJCS})
		if subj.digest != "" {
			p.evidence = append(p.evidence, hlog.Evidence{Kind: hlog.EvidenceToolSets, Body: subj.toolSet})
		}
		a, err := j.issue(p, awr.MethodObservation, in)
		if err != nil {
			return err
		}
		obsAnchor = a
	}
	if len(obs.Tools) > 0 && (newSubject || prev.Sets != j.sets) {
		if err := j.scanLabels(p, t, in, obs.Tools, obs.Instructions, false); err != nil {
			return err
		}
		cur.Sets = j.sets
	}
	if err := j.chain(p, in, prev, cur, newSubject, obsAnchor, now); err != nil {
		return err
	}
	// A new subject whose tool-set digest is the same (the registry or the
	// endpoint moved) is not a change of definitions.
	if newSubject && prev.Subject != "" && (subj.digest == "" || subj.digest != prev.ToolSetDigest) {
		if err := j.change(p, t, prev, subj, obs.Tools, now); err != nil {
			return err
		}
	}
	if newSubject {
		cur.UnchangedSince = now
	}
	cur.Subject, cur.SubjectURN, cur.ToolSetDigest = subj.sri, subj.urn, subj.digest
	cur.ToolCount, cur.LastOK, cur.StretchReported = subj.desc.ToolSet.Count, now, false
	cur.Instructions, cur.InstructionsClipped = storedInstructions(obs.Instructions, j.c.cfg.ScanLimits.BytesPerText)
	cur.Refusal = ""
	if subj.refusal != nil {
		cur.Refusal = subj.refusal.Code
	}
	return nil
}

// storedInstructions is what of a server's instructions the state keeps:
// the scan reads at most perText bytes of them, so the first perText+1
// bytes, extended to the next rune boundary (at most 3 bytes more, so the
// text stays valid UTF-8), scan exactly as the whole does, truncation flag
// included. clipped says they were cut.
func storedInstructions(s *string, perText int) (kept *string, clipped bool) {
	if s == nil || len(*s) <= perText+1 {
		return s, false
	}
	n := perText + 1
	for n < len(*s) && !utf8.RuneStart((*s)[n]) {
		n++
	}
	cut := (*s)[:n]
	return &cut, n < len(*s)
}

// base is the label input every label over subj shares.
func (j *crawlJob) base(t registry.Target, subj *subject, now time.Time) awr.LabelInput {
	in := awr.LabelInput{
		ObservedAt: now,
		Subject:    awr.Ref{ID: subj.urn, DigestSRI: subj.sri},
		ToolSet:    awr.ToolSet{Count: subj.desc.ToolSet.Count, DigestSRI: subj.digest},
		Server:     awr.Server{Name: t.Name, Registry: j.c.regURN},
	}
	if r := subj.refusal; r != nil {
		in.Reasons = []awr.Reason{{Code: r.Code, Detail: reasonDetail(r.Reason, r.Code)}}
	}
	return in
}

// reasonDetail keeps a refusal's wording, clipped to MaxReasonDetailBytes
// (the wording may quote a tool name of any length), unless the clipped
// text holds a word a label may never carry (a tool name can hold
// anything, and a cut can make one: "safety" cut after "safe").
func reasonDetail(detail, code string) string {
	clipped := clipText(detail, MaxReasonDetailBytes)
	if clipped == "" || awr.ForbiddenWord(clipped) != "" {
		return code + ": the tool set could not be digested"
	}
	return clipped
}

// MaxReasonDetailBytes bounds the detail of a refusal reason a label
// carries; the code says what the refusal is, the detail only illustrates.
const MaxReasonDetailBytes = 200

// clipMark ends a text clipText shortened.
const clipMark = "…"

// clipText is s cut to at most max bytes at a rune boundary, "…" marking a
// cut.
func clipText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len(clipMark)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + clipMark
}

// chain extends the target's label chain: the first observation label
// starts it; a continuity label joins it once the gap since the last link
// has passed.
func (j *crawlJob) chain(p *prepared, in awr.LabelInput, prev, cur *state.Observation, newSubject bool, obsAnchor *state.Anchor, now time.Time) error {
	if prev.Anchor == nil {
		cur.Anchor = obsAnchor
		return nil
	}
	if now.Sub(prev.Anchor.ObservedAt) < j.c.cfg.ContinuityGap {
		return nil
	}
	in.Prior = prior(prev.Anchor)
	if !newSubject {
		in.UnchangedSince = prev.UnchangedSince
	}
	a, err := j.issue(p, awr.MethodContinuity, in)
	if err != nil {
		return err
	}
	cur.Anchor = a
	return nil
}

func prior(a *state.Anchor) *awr.PriorLabel {
	return &awr.PriorLabel{ID: a.LabelID, DigestSRI: a.LabelSRI, ObservedAt: a.ObservedAt,
		SubjectDigestSRI: a.SubjectDigestSRI, ToolSetDigest: a.ToolSetDigest}
}

// unreachable handles a target that gave no tool list: the first failure
// at least ContinuityGap after the last link of its chain gets one
// inconclusive continuity label for the whole unreachable stretch (two
// continuity observations are ≥ 20 h apart by MTL/1, so a shorter blip
// gets none), and a new pattern or record set still re-issues the scan
// labels of its current subject from the stored tool set.
func (j *crawlJob) unreachable(ctx context.Context, p *prepared, t registry.Target, prev, cur *state.Observation, now time.Time) error {
	if a := prev.Anchor; a != nil && !prev.StretchReported && now.Sub(a.ObservedAt) >= j.c.cfg.ContinuityGap {
		in := awr.LabelInput{
			ObservedAt: now,
			Subject:    awr.Ref{ID: a.SubjectURN, DigestSRI: a.SubjectDigestSRI},
			ToolSet:    awr.ToolSet{Count: 0},
			Server:     awr.Server{Name: t.Name, Registry: j.c.regURN},
			Reasons:    []awr.Reason{{Code: "HISTOR-UNREACHABLE-001", Detail: "no tool list was read: status " + cur.Status}},
			Prior:      prior(a),
		}
		if _, err := j.issue(p, awr.MethodContinuity, in); err != nil {
			return err
		}
		cur.StretchReported = true
	}
	if prev.Subject == "" || prev.ToolSetDigest == "" || prev.Sets == j.sets {
		return nil
	}
	return j.rescan(ctx, p, t, prev, cur)
}

// rescan re-issues the scan and name-threat labels of a target's current
// subject under new sets, reading its tool set back from the log.
func (j *crawlJob) rescan(_ context.Context, p *prepared, t registry.Target, prev, cur *state.Observation) error {
	body, err := j.c.log.Evidence(hlog.EvidenceToolSets, prev.ToolSetDigest)
	if err != nil {
		return fmt.Errorf("reading stored tool set %s: %w", prev.ToolSetDigest, err)
	}
	tools, err := toolsOf(body)
	if err != nil {
		return err
	}
	in := awr.LabelInput{
		ObservedAt: prev.LastOK,
		Subject:    awr.Ref{ID: prev.SubjectURN, DigestSRI: prev.Subject},
		ToolSet:    awr.ToolSet{Count: prev.ToolCount, DigestSRI: prev.ToolSetDigest},
		Server:     awr.Server{Name: t.Name, Registry: j.c.regURN},
	}
	if err := j.scanLabels(p, t, in, tools, prev.Instructions, prev.InstructionsClipped); err != nil {
		return err
	}
	cur.Sets = j.sets
	return nil
}

// issue signs one label over in and queues it; it returns the label as a
// chain anchor.
func (j *crawlJob) issue(p *prepared, method string, in awr.LabelInput) (*state.Anchor, error) {
	id, err := awr.NewID()
	if err != nil {
		return nil, err
	}
	in.ID, in.IssuerDID, in.IssuedAt = id, j.c.did, j.c.now()
	signed, err := j.signFitting(method, &in)
	if err != nil {
		return nil, err
	}
	p.entries = append(p.entries, hlog.Entry{ID: id, Label: signed})
	p.methods = append(p.methods, method)
	return &state.Anchor{
		LabelID: id, LabelSRI: mtl.SRI(signed), ObservedAt: in.ObservedAt,
		SubjectURN: in.Subject.ID, SubjectDigestSRI: in.Subject.DigestSRI,
		ToolSetDigest: in.ToolSet.DigestSRI, ToolCount: in.ToolSet.Count,
	}, nil
}

// labelIDs is prev's method → latest label id map updated with p's labels;
// a new map, so the previous observation's stays as it was.
func labelIDs(prev map[string]string, p *prepared) map[string]string {
	out := make(map[string]string, len(prev)+len(p.methods))
	for k, v := range prev {
		out[k] = v
	}
	for i, m := range p.methods {
		out[m] = p.entries[i].ID
	}
	return out
}
