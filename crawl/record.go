package crawl

import (
	"context"
	"errors"
	"fmt"

	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/crawl/state"
	hlog "github.com/histor-observer/histor/log"
)

// ErrNotPackage refuses a Record of a target that is not a package version.
var ErrNotPackage = errors.New("not a package target with a version")

// Record turns an observation made elsewhere (the sandbox's run of one
// package version) into labels and state by the same decision, signing and
// commit as a crawled target: the four labels, with the package version as
// the subject's artifact, continuity against the target's last observation,
// a change record when the tool set moved. t must be Sandboxed with Package
// naming the version observed. Safe to call while a crawl runs: the crawl
// never processes package targets. extra is evidence appended with the
// labels (the run's behaviour record), durable when Record returns; run,
// when set, is the package run committed with the state in one batch.
func (c *Crawler) Record(ctx context.Context, t registry.Target, obs *mcpclient.Observation, run *state.PackageRun, extra ...hlog.Evidence) (*Summary, error) {
	if !t.Sandboxed() || t.Package == "" {
		return nil, fmt.Errorf("recording %s: %w", t.ID, ErrNotPackage)
	}
	if run != nil && (run.TargetID != t.ID || run.Version == "" || run.Status.Infrastructure()) {
		// Refused before anything is appended: the labels must not go into
		// the log when their state cannot be committed.
		return nil, fmt.Errorf("recording %s: run of %q version %q with status %s is not this package version's record",
			t.ID, run.TargetID, run.Version, run.Status)
	}
	c.recordMu.Lock() // one package at a time: each reads the state the last one wrote
	defer c.recordMu.Unlock()
	names, err := c.knownNames(t.Name)
	if err != nil {
		return nil, err
	}
	prev, err := c.st.Observation(t.ID)
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		return nil, fmt.Errorf("reading observation of %s: %w", t.ID, err)
	}
	byID := map[string]*state.Observation{}
	if prev != nil {
		byID[t.ID] = prev
	}
	job := &crawlJob{c: c, set: c.settings(scan.NewNameIndex(names)), prev: byID}
	sum := newSummary(c.now())
	p := job.process(t, obs)
	p.evidence = append(p.evidence, extra...)
	p.update.PackageRun = run
	if err := c.appendAll(ctx, []*prepared{p}, true); err != nil {
		return nil, fmt.Errorf("appending labels of %s: %w", t.ID, err)
	}
	if err := c.st.Commit(p.update); err != nil {
		return nil, fmt.Errorf("writing state of %s: %w", t.ID, err)
	}
	sum.add(p)
	sum.finish(c.now())
	return sum, nil
}

// knownNames is every stored target's server name, and name, for the
// name-threat match's index.
func (c *Crawler) knownNames(name string) ([]string, error) {
	ts, err := c.st.Targets()
	if err != nil {
		return nil, fmt.Errorf("reading targets: %w", err)
	}
	seen := map[string]bool{name: true}
	names := []string{name}
	for _, t := range ts {
		if !seen[t.Name] {
			seen[t.Name] = true
			names = append(names, t.Name)
		}
	}
	return names, nil
}
