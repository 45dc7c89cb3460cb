package observer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/pkgs"
	"github.com/histor-observer/histor/sandbox/rootfs"
	"github.com/histor-observer/histor/sandbox/trap"
)

// Options are one observation's inputs beyond the package.
type Options struct {
	// Env names the environment variables the registry entry declares;
	// each gets a placeholder that names it, so a value seen leaving says
	// which variable was read.
	Env []string
	// Progress, when set, is called as each stage ends, from Observe's
	// goroutine.
	Progress func(sandbox.Stage)
	// PreviousVersion and PreviousFacts are the version observed before
	// this one, for the version facts' signals (none when nil).
	PreviousVersion string
	PreviousFacts   *sandbox.VersionFacts
	// Limits, when set, are the job's: each member above zero tightens the
	// Observer's (a job can ask for less, never for more). The run records
	// the limits it had.
	Limits *sandbox.Limits
}

// run is one observation in progress.
type run struct {
	o      *Observer
	opts   Options
	limits sandbox.Limits // the Observer's, tightened by the job's
	obs    *sandbox.Observation
	tag    string // every canary value of the run carries it
	dir    string // the run's work directory, removed at the end
	spec   pkgs.Spec
	env    map[string]string // placeholders by variable name
	start  time.Time

	resolved  *pkgs.Resolved
	installed *pkgs.Installed
	release   func() // ends the run's use of a cached install; nil before install
	root      *rootfs.Root
}

// Observe observes one package: spec is a string ParseSpec reads or a
// pkgs.Spec. It always returns an Observation with a status; the error is
// only for a spec of the wrong type or unusable Options.Env names, which
// are the caller's mistakes. A malformed spec string is status refused.
func (o *Observer) Observe(ctx context.Context, spec any, opts Options) (*sandbox.Observation, error) {
	r := &run{o: o, opts: opts, start: time.Now(), tag: newTag(), limits: tighter(o.cfg.Limits, opts.Limits)}
	r.obs = &sandbox.Observation{
		Type: sandbox.Type, Observer: o.cfg.Observer, ObservedAt: r.start.UTC().Format(time.RFC3339),
		Limits: r.limits, Runtime: o.describe, Stages: []sandbox.Stage{},
		Calls:     sandbox.Coverage{Outcomes: []sandbox.CallOutcome{}},
		Install:   sandbox.InstallRecord{Status: "skipped", ScriptPackages: []string{}},
		Behaviour: sandbox.Behaviour{Observer: BehaviourObserver, Startup: emptyPhase(), Calls: emptyPhase()},
	}
	r.obs.Runtime.Network = "traps"
	var err error
	if r.env, err = trap.Placeholders(opts.Env, r.tag); err != nil {
		return nil, fmt.Errorf("observe: env placeholders: %w", err)
	}
	switch s := spec.(type) {
	case pkgs.Spec:
		r.spec = s
	case string:
		if r.spec, err = pkgs.ParseSpec(s); err != nil {
			r.obs.Name = s
			return r.end(sandbox.StatusRefused, pkgs.DetailOf(err)), nil
		}
	default:
		return nil, fmt.Errorf("%w, got %T", ErrSpec, spec)
	}
	r.obs.Registry, r.obs.Name, r.obs.Version = r.spec.Registry(), r.spec.Name, r.spec.Version
	return r.observe(ctx), nil
}

// observe holds a slot and a work directory for the stages.
func (r *run) observe(ctx context.Context) *sandbox.Observation {
	select {
	case r.o.slots <- struct{}{}:
	case <-ctx.Done():
		return r.end(sandbox.StatusBusy, "no sandbox slot before the caller gave up")
	}
	defer func() { <-r.o.slots }()
	r.o.metrics.running.Inc()
	defer r.o.metrics.running.Dec()
	dir, err := os.MkdirTemp(r.o.path("runs"), r.tag+"-")
	if err != nil {
		return r.end(sandbox.StatusInspectionFailed, "creating the run's work directory: "+err.Error())
	}
	r.dir = dir
	unmount, err := boundDir(dir, r.o.cfg.WorkBytes)
	if err != nil {
		os.Remove(dir)
		return r.end(sandbox.StatusInspectionFailed, "bounding the run's work directory: "+err.Error())
	}
	defer func() {
		if err := unmount(); err != nil {
			r.o.log.Error("unmounting run directory", "dir", dir, "err", err)
		}
		if err := os.RemoveAll(dir); err != nil {
			r.o.log.Error("removing run directory", "dir", dir, "err", err)
		}
	}()
	defer func() {
		if r.release != nil {
			r.release()
		}
	}()
	for _, stage := range []func(context.Context) bool{r.resolve, r.install, r.scripts, r.serve} {
		if !stage(ctx) {
			break
		}
	}
	return r.end(r.obs.Status, r.obs.Detail)
}

// end sets the observation's status (unless a stage already did) and its
// total time.
func (r *run) end(s sandbox.Status, detail string) *sandbox.Observation {
	if r.obs.Status == "" {
		r.obs.Status, r.obs.Detail = s, detail
	}
	if r.obs.Status == "" {
		// A stage stopped without a status: the caller gave up (a worker
		// shutting down). That says nothing about the package.
		r.obs.Status, r.obs.Detail = sandbox.StatusInspectionFailed, "stopped before the observation ended"
	}
	r.obs.Seconds = since(r.start)
	r.o.metrics.done(r.obs.Status)
	r.o.log.Info("observation", "package", r.spec.String(), "status", r.obs.Status, "seconds", r.obs.Seconds)
	return r.obs
}

// fail ends the observation with s at the current stage.
func (r *run) fail(s sandbox.Status, detail string) bool {
	r.obs.Status, r.obs.Detail = s, detail
	return false
}

// stage records one stage's end and reports it.
func (r *run) stage(name, status string, began time.Time, detail string) {
	s := sandbox.Stage{Name: name, Status: status, Seconds: since(began), Detail: detail}
	r.obs.Stages = append(r.obs.Stages, s)
	r.o.metrics.stage(s)
	r.o.log.Debug("stage", "package", r.spec.String(), "stage", name, "status", status, "seconds", s.Seconds)
	if r.opts.Progress != nil {
		r.opts.Progress(s)
	}
}

func (r *run) resolve(ctx context.Context) bool {
	began := time.Now()
	res, err := r.o.packages.Resolve(ctx, r.spec)
	if err != nil {
		r.stage("resolve", "failed", began, pkgs.DetailOf(err))
		return r.fail(pkgs.StatusOf(err), pkgs.DetailOf(err))
	}
	r.resolved, r.spec = res, res.Spec
	facts := res.Facts
	pkgs.Compare(&facts, r.opts.PreviousVersion, r.opts.PreviousFacts)
	r.obs.Name, r.obs.Version, r.obs.Package, r.obs.Integrity = res.Spec.Name, res.Spec.Version, res.Artifact, res.Integrity
	r.obs.VersionFacts = &facts
	kind := rootfs.Node
	if res.Spec.Kind == pkgs.PyPI {
		kind = rootfs.Python
	}
	r.root = r.o.roots[kind]
	r.obs.Runtime.Root, r.obs.Runtime.RootDigest, r.obs.Runtime.RootRelease = string(kind), r.root.Digest, r.root.Suite
	r.stage("resolve", "ok", began, res.Artifact)
	return true
}

func (r *run) install(ctx context.Context) bool {
	began := time.Now()
	ictx := ctx
	if r.limits.InstallSeconds < r.o.cfg.Limits.InstallSeconds {
		// The job asked for less than the installer's own bound.
		var cancel context.CancelFunc
		ictx, cancel = context.WithTimeout(ctx, seconds(r.limits.InstallSeconds))
		defer cancel()
	}
	in, release, err := r.o.install(ictx, r.resolved, filepath.Join(r.dir, "install"))
	r.release = release
	if in != nil {
		r.obs.Install = in.Record
		r.obs.Install.Seconds = roundSeconds(in.Record.Seconds)
	}
	if err != nil && ictx.Err() != nil && ctx.Err() == nil {
		// The job's own bound ended the install, download included: the
		// package's install took too long, not the registry.
		detail := fmt.Sprintf("install timed out after the job's bound of %s", seconds(r.limits.InstallSeconds))
		r.obs.Install.Status, r.obs.Install.Detail = "failed", detail
		r.stage("install", "failed", began, detail)
		return r.fail(sandbox.StatusInstallFailed, detail)
	}
	if err != nil {
		r.stage("install", r.obs.Install.Status, began, pkgs.DetailOf(err))
		return r.fail(pkgs.StatusOf(err), pkgs.DetailOf(err))
	}
	r.installed = in
	detail := ""
	if n := len(in.Record.ScriptPackages); n > 0 {
		detail = fmt.Sprintf("%d packages with install scripts", n)
	}
	r.stage("install", "ok", began, detail)
	return true
}

// emptyPhase is a phase with its lists present (empty, never null) and
// nothing recorded yet: incomplete until something fills it.
func emptyPhase() sandbox.Phase {
	return sandbox.Phase{
		Exec: []string{}, Lookups: []string{}, Network: []sandbox.NetworkAttempt{},
		Decoys: []sandbox.DecoyRead{}, Placeholders: []sandbox.PlaceholderUse{}, Writes: []string{},
		IncompleteReasons: []string{"not-run"},
	}
}

// newTag is a run tag: 12 of [a-z0-9], as trap wants.
func newTag() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func since(t time.Time) float64 { return roundSeconds(time.Since(t).Seconds()) }

func roundSeconds(s float64) float64 { return float64(int64(s*1000+0.5)) / 1000 }

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
