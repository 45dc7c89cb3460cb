package observer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/gvisor"
	"github.com/histor-observer/histor/sandbox/pkgs"
	"github.com/histor-observer/histor/sandbox/rootfs"
	"github.com/histor-observer/histor/sandbox/stdio"
	"github.com/histor-observer/histor/sandbox/trap"
)

// Observer runs observations. It owns one gVisor runtime, one trap pool, the
// package installers and the roots; safe for concurrent use, bounded by
// Config.Concurrency.
type Observer struct {
	cfg      Config
	log      *slog.Logger
	runtime  *gvisor.Runtime
	describe sandbox.Runtime // runsc's version and platform, read once
	pool     *trap.Pool
	packages *pkgs.Packages
	roots    map[rootfs.Kind]*rootfs.Root
	slots    chan struct{} // one token per running observation
	cache    *installCache // nil without Config.InstallCache
	metrics  *metrics
	inst     *instance           // this Observer's own locked directory under Config.WorkDir
	talkHook func(*stdio.Result) // tests only: sees each session's result (the answers the observation keeps no copy of)
}

// New checks cfg, starts the runtime (sweeping what earlier runs of it
// left), makes the trap CA, and ensures both roots, building what is missing
// and checking each cached root's digest once. It fails when the sandbox
// cannot run here: that is the caller's to report, never a package's status.
func New(ctx context.Context, cfg Config) (*Observer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	o := &Observer{cfg: cfg, log: cfg.Logger, slots: make(chan struct{}, cfg.Concurrency)}
	inst, err := claimInstance(ctx, cfg.WorkDir, sweepRuntime(cfg.Runsc, cfg.Platform, cfg.Logger), cfg.Logger)
	if err != nil {
		return nil, err
	}
	o.inst = inst
	if err := os.MkdirAll(o.path("runs"), 0o700); err != nil {
		o.Close()
		return nil, fmt.Errorf("creating work dir: %w", err)
	}
	steps := []func(context.Context) error{o.newMetrics, o.newRuntime, o.newPool, o.newPackages, o.newRoots, o.newCache}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			o.Close()
			return nil, err
		}
	}
	return o, nil
}

// path is name inside the Observer's own work directory.
func (o *Observer) path(name string) string { return filepath.Join(o.inst.dir, name) }

func (o *Observer) newMetrics(context.Context) error {
	m, err := newMetrics(o.cfg.Registerer)
	o.metrics = m
	return err
}

func (o *Observer) newRuntime(ctx context.Context) error {
	rt, err := gvisor.New(ctx, gvisor.Config{
		Runsc: o.cfg.Runsc, StateDir: o.path("runsc"), Platform: o.cfg.Platform,
		Logger: o.log, Registerer: o.cfg.Registerer,
	})
	if err != nil {
		return &UnavailableError{What: "gVisor runtime", Err: err}
	}
	o.runtime, o.describe = rt, rt.Describe()
	return nil
}

func (o *Observer) newPool(context.Context) error {
	p, err := trap.NewPool(trap.Config{CAFile: o.path("trap-ca.pem"), Logger: o.log, Registry: o.cfg.Registerer})
	if err != nil {
		return &UnavailableError{What: "trap network", Err: err}
	}
	o.pool = p
	return nil
}

func (o *Observer) newPackages(context.Context) error {
	p, err := pkgs.New(pkgs.Config{
		NPMRegistry: o.cfg.NPMRegistry, PyPI: o.cfg.PyPI, PyPIIndex: o.cfg.PyPIIndex, Client: o.cfg.HTTPClient,
		InstallTimeout: seconds(o.cfg.Limits.InstallSeconds),
	})
	if err != nil {
		return fmt.Errorf("configuring installers: %w", err)
	}
	o.packages = p
	return nil
}

// newRoots ensures the node and python roots, verifying each digest once.
func (o *Observer) newRoots(ctx context.Context) error {
	c := &rootfs.Cache{Dir: o.cfg.RootfsDir, Verify: !o.cfg.SkipRootCheck, Logger: o.log}
	o.roots = map[rootfs.Kind]*rootfs.Root{}
	for _, k := range []rootfs.Kind{rootfs.Node, rootfs.Python} {
		r, err := c.Ensure(ctx, k)
		if err != nil {
			return &UnavailableError{What: string(k) + " root", Err: err}
		}
		o.roots[k] = r
	}
	return nil
}

func (o *Observer) newCache(context.Context) error {
	if o.cfg.InstallCache == "" {
		return nil
	}
	c, err := openInstallCache(o.cfg.InstallCache, o.cfg.InstallCacheBytes)
	o.cache = c
	return err
}

// Roots are the roots New ensured, by kind.
func (o *Observer) Roots() map[rootfs.Kind]*rootfs.Root { return o.roots }

// Limits are the bounds every run has.
func (o *Observer) Limits() sandbox.Limits { return o.cfg.Limits }

// Close sweeps what the runtime may have left. Observations still running
// are the caller's to end first (cancel their contexts).
func (o *Observer) Close() error {
	defer o.metrics.unregister()
	if o.pool != nil {
		defer o.pool.Close()
	}
	if o.runtime != nil {
		defer o.runtime.Close()
	}
	if o.runtime == nil { // New failed before the runtime started
		return o.inst.release()
	}
	if err := o.runtime.Sweep(context.Background()); err != nil {
		return fmt.Errorf("sweeping runtime: %w", err)
	}
	if err := o.inst.release(); err != nil {
		return fmt.Errorf("removing the observer's work dir: %w", err)
	}
	return nil
}

// UnavailableError says the sandbox cannot run on this host, and which part
// of it is missing.
type UnavailableError struct {
	What string
	Err  error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("sandbox unavailable: %s: %v", e.What, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// ErrSpec is wrapped by Observe's error for a spec of the wrong type.
var ErrSpec = errors.New("observe: spec must be a string or a pkgs.Spec")
