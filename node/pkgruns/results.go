package pkgruns

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/state"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/pkgs"
	"github.com/histor-observer/histor/sandbox/queue"
)

// handle takes one result the queue accepted (bound to its job, for the
// job's package) or recorded as poisoned, and records it for every target
// of that package. An error leaves the result to be offered again; a
// result that can never be recorded (it does not parse) is logged and
// dropped, or it would come back forever.
func (p *Part) handle(ctx context.Context, r queue.Result) error {
	obs, err := sandbox.ParseObservation(r.Observation)
	if err != nil {
		p.log.Warn("dropping a sandbox result", "job", r.JobID, "target", r.Target, "err", err)
		return nil
	}
	version := specVersion(r.Target)
	if obs.Package != r.Target || version == "" {
		p.log.Warn("dropping a sandbox result for another package", "job", r.JobID, "target", r.Target, "package", obs.Package)
		return nil
	}
	ts, err := p.targetsOf(specKey(r.Target))
	if err != nil {
		return err
	}
	var labelled []string
	for _, t := range ts {
		wrote, err := p.record(ctx, t, version, obs)
		if err != nil {
			return fmt.Errorf("recording %s for %s: %w", r.Target, t.ID, err)
		}
		if wrote {
			labelled = append(labelled, t.ID)
		}
	}
	if len(labelled) != 0 && p.committed != nil { // package runs alone: nothing reads them but the census
		p.committed(ctx, labelled)
	}
	return nil
}

// targetsOf is the package targets whose endpoint is key.
func (p *Part) targetsOf(key string) ([]registry.Target, error) {
	all, err := packageTargets(p.st, p.curated)
	if err != nil {
		return nil, err
	}
	var out []registry.Target
	for _, t := range all {
		if t.Endpoint == key {
			out = append(out, t)
		}
	}
	return out, nil
}

// record writes one run of version for t: a PackageRun for an
// infrastructure status; labels through the crawler's Record (with the
// behaviour record as evidence) and then a PackageRun for any other. A
// version already recorded with a package status is left as it is: the
// same result may come twice. labelled reports that labels were written.
func (p *Part) record(ctx context.Context, t registry.Target, version string, obs *sandbox.Observation) (labelled bool, err error) {
	if done, err := p.observed(t.ID, version); err != nil || done {
		return false, err
	}
	run := packageRun(t.ID, version, obs)
	if obs.Status.Infrastructure() {
		return false, p.st.PutPackageRun(run)
	}
	if err := p.compareFacts(t.ID, version, &run); err != nil {
		return false, err
	}
	rec, err := behaviourRecord(obs, run.Facts)
	if err != nil {
		return false, err
	}
	t.Package = obs.Package
	mo, err := crawlObservation(obs)
	if err != nil {
		return false, err
	}
	sum := sha256.Sum256(rec)
	run.Behaviour, run.BehaviourSHA256 = mtl.SRI(rec), hex.EncodeToString(sum[:])
	// The run is committed with the labels' state, in one batch.
	if _, err := p.cr.Record(ctx, t, mo, &run, hlog.Evidence{Kind: hlog.EvidenceBehaviour, Body: rec}); err != nil {
		return false, err
	}
	return true, nil
}

// packageRun is what the state keeps of obs.
func packageRun(id, version string, obs *sandbox.Observation) state.PackageRun {
	at, err := time.Parse(time.RFC3339, obs.ObservedAt)
	if err != nil {
		at = time.Now().UTC().Truncate(time.Second)
	}
	var facts *sandbox.VersionFacts
	if obs.VersionFacts != nil {
		f := *obs.VersionFacts
		facts = &f
	}
	return state.PackageRun{
		TargetID: id, Package: obs.Package, Version: version, Status: obs.Status, Detail: obs.Detail,
		ObservedAt: at.UTC(), Complete: obs.Status == sandbox.StatusOK && obs.Behaviour.Complete,
		Calls: obs.Calls, Observer: obs.Observer, Runtime: obs.Runtime, Facts: facts,
		Seconds: obs.Seconds, Summary: summarise(obs),
	}
}

// compareFacts sets the run's signals against the facts of the version
// observed before it, read from the state: the node decides them, not the
// worker.
func (p *Part) compareFacts(id, version string, run *state.PackageRun) error {
	if run.Facts == nil {
		return nil
	}
	prev, err := p.st.PackageRun(id)
	if errors.Is(err, state.ErrNotFound) || (err == nil && (prev.Version == version || prev.Facts == nil)) {
		pkgs.Compare(run.Facts, "", nil)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the previous run of %s: %w", id, err)
	}
	pkgs.Compare(run.Facts, prev.Version, prev.Facts)
	return nil
}

// summarise is obs as the census reads it: statuses, phase completion and
// coverage, without the tools or the per-phase records (those are in the
// behaviour evidence).
func summarise(obs *sandbox.Observation) *sandbox.Observation {
	o := *obs
	o.Tools, o.ServerInfo, o.Stages = nil, nil, nil
	o.Behaviour.Startup = phaseSummary(o.Behaviour.Startup)
	o.Behaviour.Calls = phaseSummary(o.Behaviour.Calls)
	if o.Install.Scripts != nil {
		p := phaseSummary(*o.Install.Scripts)
		o.Install.Scripts = &p
	}
	return &o
}

func phaseSummary(p sandbox.Phase) sandbox.Phase {
	return sandbox.Phase{Complete: p.Complete, IncompleteReasons: p.IncompleteReasons, ExitCode: p.ExitCode,
		TimedOut: p.TimedOut, Truncated: p.Truncated}
}

// behaviourRecord is the observation without its tools (those are the
// tool set's evidence), with the node's version facts, as RFC 8785 JSON.
// Plain RFC 8785 rather than canon: a run's durations are fractions of a
// second, which AWR/2 refuses in what it signs, and this record is cited by
// digest, never signed itself. A serverInfo that will not encode (a number
// JSON cannot hold) is left out rather than losing the run.
func behaviourRecord(obs *sandbox.Observation, facts *sandbox.VersionFacts) ([]byte, error) {
	o := *obs
	o.Tools, o.VersionFacts = nil, facts
	b, err := rfc8785(o)
	if err != nil && o.ServerInfo != nil {
		o.ServerInfo = nil
		b, err = rfc8785(o)
	}
	if err != nil {
		return nil, fmt.Errorf("canonicalising the behaviour record: %w", err)
	}
	return b, nil
}

// rfc8785 is v's RFC 8785 form. Not log/canon's: that one holds the MTL/1
// profile, integers only, and a behaviour record carries seconds as
// fractions, which RFC 8785 writes in ECMAScript's number form.
func rfc8785(v any) ([]byte, error) {
	b, err := canon.MarshalPlain(v)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}

// crawlObservation is what the crawler's decision reads of a sandbox run:
// the tools as ParseObservation parsed them (canon, as the crawler's own
// client parses), serverInfo re-read the same way.
func crawlObservation(obs *sandbox.Observation) (*mcpclient.Observation, error) {
	mo := &mcpclient.Observation{Status: string(obs.Status), Detail: obs.Detail, ProtocolVersion: obs.ProtocolVersion}
	if obs.Status == sandbox.StatusOK {
		mo.Tools = obs.Tools
		if mo.Tools == nil {
			mo.Tools = []any{}
		}
	}
	if obs.ServerInfo != nil {
		raw, err := json.Marshal(obs.ServerInfo)
		if err != nil {
			return nil, fmt.Errorf("re-reading serverInfo: %w", err)
		}
		v, err := canon.ParseDeferringNumbers(raw, canon.Limits{MaxDepth: 64, MaxBytes: len(raw) + 1})
		if m, ok := v.(map[string]any); err == nil && ok {
			mo.ServerInfo = m
		}
	}
	return mo, nil
}
