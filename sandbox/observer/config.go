package observer

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/sandbox"
)

// DefaultObserver is the Observation's observer member: which implementation
// and version of the pipeline wrote it.
const DefaultObserver = "histor-go/1"

// BehaviourObserver names how behaviour is recorded: runsc's syscall trace
// read from outside the sandbox, and the traps' records.
const BehaviourObserver = "histor-gvisor-trace/1"

// Config says where an Observer keeps its state and how far a run may go.
// Zero values take the defaults named on each field.
type Config struct {
	// WorkDir holds a directory of each Observer's own (locked for its
	// life, removed by Close) with one directory per observation, runsc's
	// state and the trap CA certificate; processes may share it, and each
	// New sweeps what a dead one left. Required; created if missing.
	WorkDir string
	// WorkBytes bounds what one observation may write on the host: its
	// work directory (the install, the scripts' copy of it, HOME, the
	// working directory and the trace) is a tmpfs of this size, so a
	// package that writes without end fills its own run, never the host's
	// disk. Default DefaultWorkBytes.
	WorkBytes int64
	// RootfsDir is the cache of Debian roots (rootfs.Cache.Dir). Required.
	// New builds a missing root with mmdebstrap (minutes) and checks the
	// digest of each cached one against its record once.
	RootfsDir string
	// SkipRootCheck trusts the roots' records instead of recomputing their
	// digests at New (about 5 s). For tests that build many Observers.
	SkipRootCheck bool
	// InstallCache, when set, keeps installed packages keyed by their
	// registry integrity, so a version installed once is not downloaded
	// again. Install scripts always run on a copy. Processes may share
	// it: a run holds a shared flock on its entry, which eviction respects.
	InstallCache string
	// InstallCacheBytes bounds the install cache's trees: a store evicts
	// the least recently used installs beyond it, and an install larger
	// than the whole bound is not kept. Default DefaultInstallCacheBytes.
	InstallCacheBytes int64

	// NPMRegistry, PyPI and PyPIIndex are sandbox/pkgs' (defaults: the
	// public registries).
	NPMRegistry, PyPI, PyPIIndex string
	// HTTPClient makes the registry requests (default: 30 s per request).
	HTTPClient *http.Client

	// Runsc is the runsc binary (default: the one on PATH); Platform its
	// --platform (default systrap).
	Runsc, Platform string

	// Limits bound every run (default sandbox.DefaultLimits()). Zero
	// members take the default's value.
	Limits sandbox.Limits
	// Concurrency bounds the observations running at once (default: one
	// per CPU, no more than the memory holds at one run's limit each).
	Concurrency int
	// Observer is the Observation's observer member (default DefaultObserver).
	Observer string

	// Logger receives a line per stage; nil discards.
	Logger *slog.Logger
	// Registerer gets the observer's, the runtime's and the traps' metrics;
	// nil registers none.
	Registerer prometheus.Registerer
}

// withDefaults checks c and fills its defaults.
func (c Config) withDefaults() (Config, error) {
	if c.WorkDir == "" {
		return c, errors.New("observer config: WorkDir is required")
	}
	if c.RootfsDir == "" {
		return c, errors.New("observer config: RootfsDir is required")
	}
	var err error
	if c.WorkDir, err = filepath.Abs(c.WorkDir); err != nil {
		return c, fmt.Errorf("observer config: work dir: %w", err)
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	c.Limits = limitsWithDefaults(c.Limits)
	if c.WorkBytes < 0 {
		return c, errors.New("observer config: WorkBytes must not be negative")
	}
	if c.InstallCacheBytes < 0 {
		return c, errors.New("observer config: InstallCacheBytes must not be negative")
	}
	if c.InstallCacheBytes == 0 {
		c.InstallCacheBytes = DefaultInstallCacheBytes
	}
	if c.WorkBytes == 0 {
		c.WorkBytes = DefaultWorkBytes
	}
	if c.Concurrency < 0 {
		return c, errors.New("observer config: Concurrency must not be negative")
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency(c.Limits.MemoryBytes)
	}
	if c.Observer == "" {
		c.Observer = DefaultObserver
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// limitsWithDefaults fills l's zero members from sandbox.DefaultLimits.
func limitsWithDefaults(l sandbox.Limits) sandbox.Limits {
	d := sandbox.DefaultLimits()
	pick := func(v, def float64) float64 {
		if v > 0 {
			return v
		}
		return def
	}
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = d.MemoryBytes
	}
	if l.TmpBytes <= 0 {
		l.TmpBytes = d.TmpBytes
	}
	if l.Pids <= 0 {
		l.Pids = d.Pids
	}
	if l.Calls == 0 {
		l.Calls = d.Calls
	}
	l.CPUs = pick(l.CPUs, d.CPUs)
	l.InstallSeconds = pick(l.InstallSeconds, d.InstallSeconds)
	l.RunSeconds = pick(l.RunSeconds, d.RunSeconds)
	l.CallSeconds = pick(l.CallSeconds, d.CallSeconds)
	l.ReadOnlyRoot = true // the runner has no other mode
	return l
}

// DefaultConcurrency is one run per CPU, no more than the available memory
// holds at memPerRun each (plus a quarter for runsc's own processes), and at
// least one.
func DefaultConcurrency(memPerRun int64) int {
	n := runtime.NumCPU()
	if avail := availableMemory(); avail > 0 && memPerRun > 0 {
		n = min(n, int(avail/(memPerRun+memPerRun/4)))
	}
	return max(n, 1)
}

// availableMemory reads MemAvailable from /proc/meminfo; 0 if unknown.
func availableMemory() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	var kb int64
	for _, line := range strings.Split(string(data), "\n") {
		if n, _ := fmt.Sscanf(line, "MemAvailable: %d kB", &kb); n == 1 {
			return kb << 10
		}
	}
	return 0
}

// DefaultWorkBytes is Config.WorkBytes' default: room for an install of a
// few hundred megabytes, its copy for the install scripts and the trace.
const DefaultWorkBytes = 2 << 30

// DefaultInstallCacheBytes is Config.InstallCacheBytes' default: a few
// hundred typical npm servers (tens of MB each with their dependencies).
const DefaultInstallCacheBytes = 8 << 30

// tighter is base with every member of job above zero that is tighter
// taking its place: a job may ask for less than the Observer allows, never
// for more.
func tighter(base sandbox.Limits, job *sandbox.Limits) sandbox.Limits {
	if job == nil {
		return base
	}
	lower := func(b, j float64) float64 {
		if j > 0 && j < b {
			return j
		}
		return b
	}
	base.MemoryBytes = int64(lower(float64(base.MemoryBytes), float64(job.MemoryBytes)))
	base.TmpBytes = int64(lower(float64(base.TmpBytes), float64(job.TmpBytes)))
	base.Pids = int(lower(float64(base.Pids), float64(job.Pids)))
	base.Calls = int(lower(float64(base.Calls), float64(job.Calls)))
	base.CPUs = lower(base.CPUs, job.CPUs)
	base.InstallSeconds = lower(base.InstallSeconds, job.InstallSeconds)
	base.RunSeconds = lower(base.RunSeconds, job.RunSeconds)
	base.CallSeconds = lower(base.CallSeconds, job.CallSeconds)
	return base
}
