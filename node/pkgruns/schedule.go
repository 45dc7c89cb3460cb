package pkgruns

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/sandbox/pkgs"
	"github.com/histor-observer/histor/sandbox/queue"
)

// packageTargets is every package the sandbox observes: the stored
// targets that are Sandboxed and not delisted, and the curated list's
// packages the registry does not list (as the crawl adds them), by id.
func packageTargets(st RunReader, cur *registry.Curated) ([]registry.Target, error) {
	stored, err := st.Targets()
	if err != nil {
		return nil, fmt.Errorf("reading targets: %w", err)
	}
	seen, listed := map[string]bool{}, map[string]bool{}
	var out []registry.Target
	for _, t := range stored {
		if !t.Sandboxed() || t.Delisted {
			continue
		}
		seen[t.ID] = true
		if t.Registry == "" {
			listed[t.Endpoint] = true
		}
		out = append(out, t.Target)
	}
	if cur != nil {
		for _, t := range cur.Targets {
			if t.Sandboxed() && !seen[t.ID] && !listed[t.Endpoint] {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// candidate is one package target in a round, with what orders it.
type candidate struct {
	t     registry.Target
	known bool // observed before (any version)
	rank  int  // place in the curated list; len(list) for others
}

// candidates orders the targets as the sandbox runs them: never-observed
// packages first, in the curated list's order (by downloads) and then by
// name, then the packages observed before, for their new versions.
func (p *Part) candidates(ts []registry.Target) ([]candidate, error) {
	cs := make([]candidate, 0, len(ts))
	for _, t := range ts {
		c := candidate{t: t, rank: len(ts)}
		if p.curated != nil {
			if r, ok := p.curated.Rank[t.ID]; ok {
				c.rank = r
			}
		}
		_, err := p.st.PackageRun(t.ID)
		switch {
		case err == nil:
			c.known = true
		case !errors.Is(err, state.ErrNotFound):
			return nil, fmt.Errorf("reading package run of %s: %w", t.ID, err)
		}
		cs = append(cs, c)
	}
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.known != b.known {
			return !a.known
		}
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		return a.t.Name < b.t.Name
	})
	return cs, nil
}

// ScheduleRound queues the versions no run has observed yet, at most
// MaxJobsPerRound of them, and reports how many it queued. A version whose
// only records are infrastructure statuses (busy, sandbox-unavailable,
// inspection-failed, poisoned) is queued again: they say nothing of the
// package. The queue holds a target once per its duplicate window (24 h),
// so a version that keeps failing is tried at most that often.
func (p *Part) ScheduleRound(ctx context.Context) (int, error) {
	p.round.Lock()
	defer p.round.Unlock()
	ts, err := packageTargets(p.st, p.curated)
	if err != nil {
		return 0, err
	}
	cs, err := p.candidates(ts)
	if err != nil {
		return 0, err
	}
	queued, resolves := 0, 0
	resolved := map[string]string{} // endpoint → latest spec, this round
	for _, c := range cs {
		if queued == p.cfg.MaxJobsPerRound || ctx.Err() != nil {
			break
		}
		spec := c.t.Package
		if spec == "" {
			if spec = resolved[c.t.Endpoint]; spec == "" {
				if resolves == p.cfg.MaxResolvesPerRound {
					continue
				}
				resolves++
				if spec = p.latest(ctx, c.t.Endpoint); spec == "" {
					continue
				}
				resolved[c.t.Endpoint] = spec
			}
		}
		ok, err := p.enqueue(ctx, c.t, spec)
		if err != nil {
			return queued, err
		}
		if ok {
			queued++
		}
	}
	if queued > 0 {
		p.log.Info("sandbox jobs queued", "jobs", queued, "packages", len(cs))
	}
	return queued, nil
}

// latest is the registry's latest version of the package key, as a spec;
// "" when the registry cannot say (logged, tried again next round).
func (p *Part) latest(ctx context.Context, key string) string {
	sp, err := pkgs.ParseSpec(key)
	if err != nil {
		p.log.Warn("package target with an unusable key", "endpoint", key, "err", err)
		return ""
	}
	r, err := p.pk.Resolve(ctx, sp)
	if err != nil {
		p.log.Warn("resolving the latest version", "package", key, "err", err)
		return ""
	}
	return r.Artifact
}

// enqueue queues spec for t unless that version was observed; false when
// nothing was queued.
func (p *Part) enqueue(ctx context.Context, t registry.Target, spec string) (bool, error) {
	version := specVersion(spec)
	if version == "" {
		return false, nil
	}
	done, err := p.observed(t.ID, version)
	if err != nil || done {
		return false, err
	}
	job, err := queue.NewJob(spec, p.cfg.Limits, p.now())
	if err != nil {
		p.log.Warn("package target with an unusable spec", "target", t.ID, "spec", spec, "err", err)
		return false, nil
	}
	job.Env = t.Env // the registry checked the names; each gets a placeholder
	err = p.q.Enqueue(ctx, job)
	if errors.Is(err, queue.ErrDuplicate) {
		return false, nil
	}
	return err == nil, err
}

// observed reports whether a run of version of target id said something
// about the package (any status but an infrastructure one).
func (p *Part) observed(id, version string) (bool, error) {
	r, err := p.st.PackageVersion(id, version)
	if errors.Is(err, state.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading package version %s of %s: %w", version, id, err)
	}
	return !r.Status.Infrastructure(), nil
}

// specVersion is the version of npm:<name>@<version> or
// pypi:<name>==<version>; "" when the spec names none.
func specVersion(spec string) string {
	if rest, ok := strings.CutPrefix(spec, "pypi:"); ok {
		_, v, _ := strings.Cut(rest, "==")
		return v
	}
	rest, ok := strings.CutPrefix(spec, "npm:")
	if i := strings.LastIndex(rest, "@"); ok && i > 0 {
		return rest[i+1:]
	}
	return ""
}

// specKey is the package key (a target's endpoint) of a versioned spec.
func specKey(spec string) string {
	v := specVersion(spec)
	if v == "" {
		return ""
	}
	if strings.HasPrefix(spec, "pypi:") {
		return strings.TrimSuffix(spec, "=="+v)
	}
	return strings.TrimSuffix(spec, "@"+v)
}
