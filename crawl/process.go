package crawl

import (
	"fmt"
	"maps"
	"time"
	"unicode/utf8"

	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/state"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/clip"
	"github.com/histor-observer/histor/log/mtl"
)

// StatusInternalError is the status of a target our side failed on (its
// labels could not be issued or appended); the summary counts it there too,
// whatever the server answered.
const StatusInternalError = "internal-error"

// crawlJob is what every target of one crawl shares.
type crawlJob struct {
	c   *Crawler
	set *settings
	// prev is every target's observation as the crawl began, read in one
	// scan rather than one lookup per target; read-only during the crawl,
	// and each target is processed once per crawl.
	prev map[string]*state.Observation
}

// prepared is one target's outcome, ready to be appended and committed.
type prepared struct {
	status   string
	entries  []hlog.Entry
	refs     []state.LabelRef // one per entry, in order; LeafIndex set at commit
	evidence []hlog.Evidence
	update   state.Update
	prev     *state.Observation // the state the target's failure falls back to
	err      error              // our own failure on this target, never the server's
}

// process runs one attempt at a target through its steps: the subject of
// what it showed, the decision (with the stored tool set it asks for), and
// the signed labels. obs is nil for a target never dialled. A failure of
// ours is logged and recorded against the target; it never ends the crawl.
func (j *crawlJob) process(t registry.Target, obs *mcpclient.Observation) *prepared {
	now := j.c.now()
	prev := j.prevOf(t.ID)
	out, err := j.decide(t, prev, obs, now)
	var p *prepared
	if err == nil {
		p, err = j.sign(out, prev)
	}
	if err != nil {
		j.c.logger.Error("processing target", "id", t.ID, "endpoint", t.Endpoint, "error", err)
		p = &prepared{prev: prev}
		p.failed(err, now)
	}
	p.update.Target = &state.Target{Target: t, Status: p.status, LastCrawled: now}
	if next := p.update.Observation; next != nil {
		p.update.Target.Detail = next.Detail
	}
	return p
}

func (j *crawlJob) prevOf(id string) *state.Observation {
	if prev := j.prev[id]; prev != nil {
		return prev
	}
	return &state.Observation{TargetID: id}
}

// decide builds the attempt from obs and decides it, loading the stored
// tool set the decision asks for.
func (j *crawlJob) decide(t registry.Target, prev *state.Observation, obs *mcpclient.Observation, now time.Time) (outcome, error) {
	d := decision{target: t, prev: prev, now: now}
	if obs != nil {
		var subj *subject
		if obs.Status == mcpclient.StatusOK {
			var err error
			if subj, err = buildSubject(t, j.set.regURN, obs.Tools); err != nil {
				return outcome{}, err
			}
		}
		d.seen = attemptOf(obs, subj)
	}
	out, err := decide(j.set, d)
	if err != nil || out.needTools == "" && out.needNames == "" {
		return out, err
	}
	if out.needTools != "" {
		d.prevTools, err = j.storedTools(out.needTools)
	} else {
		d.prevNames, err = j.storedNames(out.needNames)
	}
	if err != nil {
		return outcome{}, err
	}
	return decide(j.set, d)
}

// storedTools reads a tool set back from the log's evidence.
func (j *crawlJob) storedTools(digest string) ([]any, error) {
	body, err := j.c.log.Evidence(hlog.EvidenceToolSets, digest)
	if err != nil {
		return nil, fmt.Errorf("reading stored tool set %s: %w", digest, err)
	}
	return toolsOf(body)
}

// storedNames reads toolSet.names back from a stored subject descriptor;
// never nil, so an empty list still counts as read.
func (j *crawlJob) storedNames(sri string) ([]string, error) {
	body, err := j.c.log.Evidence(hlog.EvidenceDescriptors, sri)
	if err != nil {
		return nil, fmt.Errorf("reading stored descriptor %s: %w", sri, err)
	}
	return namesOf(body)
}

// sign issues the outcome's labels and completes the next state from them:
// the latest label id of each method, the chain's new last link, and the
// change record's continuity label.
func (j *crawlJob) sign(out outcome, prev *state.Observation) (*prepared, error) {
	p := &prepared{status: out.status, evidence: out.evidence, prev: prev}
	next := out.next
	if next != nil {
		next.Labels = make(map[string]string, len(prev.Labels)+len(out.labels))
		maps.Copy(next.Labels, prev.Labels)
	}
	for _, pl := range out.labels {
		ref, err := j.issue(p, pl.method, pl.in)
		if err != nil {
			return nil, err
		}
		next.Labels[pl.method] = ref.ID
		if pl.link {
			next.Anchor = anchorOf(ref, pl.in)
		}
		if pl.method == awr.MethodContinuity && out.change != nil {
			out.change.LabelID = ref.ID
		}
	}
	p.update.Observation, p.update.Change = next, out.change
	if next != nil {
		p.update.Span = next.Span
	}
	return p, nil
}

// issue signs one label over in and queues it.
func (j *crawlJob) issue(p *prepared, method string, in awr.LabelInput) (state.LabelRef, error) {
	id, err := awr.NewID()
	if err != nil {
		return state.LabelRef{}, err
	}
	in.ID, in.IssuerDID, in.IssuedAt = id, j.c.did, j.c.now()
	signed, verdict, err := j.c.signFitting(method, &in)
	if err != nil {
		return state.LabelRef{}, err
	}
	ref := state.LabelRef{
		TargetID: p.prev.TargetID, ID: id, Method: method, Verdict: verdict, Subject: in.Subject.DigestSRI,
		ObservedAt: in.ObservedAt, IssuedAt: in.IssuedAt, Digest: mtl.SRI(signed),
	}
	p.entries = append(p.entries, hlog.Entry{ID: id, Label: signed})
	p.refs = append(p.refs, ref)
	return ref, nil
}

// anchorOf is a signed label as the chain link a later continuity label
// names as its prior.
func anchorOf(ref state.LabelRef, in awr.LabelInput) *state.Anchor {
	return &state.Anchor{
		LabelID: ref.ID, LabelSRI: ref.Digest, ObservedAt: in.ObservedAt,
		SubjectURN: in.Subject.ID, SubjectDigestSRI: in.Subject.DigestSRI,
		ToolSetDigest: in.ToolSet.DigestSRI, ToolCount: in.ToolSet.Count,
	}
}

// failed marks p as a target our side failed on: none of its labels
// counts, its change is dropped, and its state is failedState's (the
// summary and the stored target both say internal-error).
func (p *prepared) failed(err error, now time.Time) {
	p.err, p.status = err, StatusInternalError
	p.entries, p.refs, p.evidence = nil, nil, nil
	next := failedState(p.prev, err, now)
	p.update.Observation, p.update.Change, p.update.Span, p.update.Labels = next, nil, next.Span, nil
	if t := p.update.Target; t != nil {
		failed := *t
		failed.Status, failed.Detail = StatusInternalError, next.Detail
		p.update.Target = &failed
	}
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

// reasonDetail keeps a refusal's wording, clipped to MaxReasonDetailBytes
// (the wording may quote a tool name of any length), unless the clipped
// text holds a word a label may never carry (a tool name can hold
// anything, and a cut can make one: "safety" cut after "safe").
func reasonDetail(detail, code string) string {
	clipped := clip.String(detail, MaxReasonDetailBytes)
	if clipped == "" || awr.ForbiddenWord(clipped) != "" {
		return code + ": the tool set could not be digested"
	}
	return clipped
}

// MaxReasonDetailBytes bounds the detail of a refusal reason a label
// carries; the code says what the refusal is, the detail only illustrates.
const MaxReasonDetailBytes = 200
