package gvisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/sandbox"
)

// IDPrefix begins every sandbox ID and cgroup this package creates, so a
// sweep can tell its own leftovers from anyone else's.
const IDPrefix = "histor-"

// CgroupParent is the cgroup directory (under each controller) that holds
// one child per run.
const CgroupParent = "histor-gvisor"

// MinRelease is the oldest runsc release accepted: the 2022 Debian build
// failed with EINVAL on `ls /` on the kernels we run on.
const MinRelease = 20240729

// DefaultPlatform is runsc's own default in the releases we accept.
const DefaultPlatform = "systrap"

// controlTimeout bounds each runsc control command (kill, delete, list):
// they run after the run's own context may have ended.
const controlTimeout = 15 * time.Second

// Config says where runsc and its state are.
type Config struct {
	// Runsc is the runsc binary; empty means the one on PATH.
	Runsc string
	// StateDir is runsc's --root. It belongs to one Runtime: New sweeps
	// every container in it.
	StateDir string
	// Platform is runsc's --platform; empty means DefaultPlatform.
	Platform string
	// CgroupRoot is where the cgroup hierarchies are mounted; empty means
	// /sys/fs/cgroup.
	CgroupRoot string
	// SweepGrace is how old a leftover cgroup must be before Sweep removes
	// it; zero means SweepGrace.
	SweepGrace time.Duration
	// Logger receives what the runtime does; nil discards.
	Logger *slog.Logger
	// Registerer, when set, gets the run metrics.
	Registerer prometheus.Registerer
}

// Runtime starts sandboxes with one runsc binary and one state directory.
type Runtime struct {
	runsc    string
	state    string
	platform string
	cgroups  string
	grace    time.Duration
	log      *slog.Logger
	metrics  *metrics
	version  Version
}

// Version is what `runsc --version` says.
type Version struct {
	Version string // first line without "runsc version ", e.g. 0.0~20240729.0
	Release int    // the release date, e.g. 20240729; 0 when the version names none
	Spec    string // the OCI runtime-spec version, e.g. 1.2.0
}

// Sandbox fills the members of sandbox.Runtime this package knows.
func (v Version) Sandbox(platform string) sandbox.Runtime {
	return sandbox.Runtime{Name: "runsc", Version: v.Version, Spec: v.Spec, Platform: platform}
}

// TooOldError refuses a runsc older than MinRelease.
type TooOldError struct{ Version Version }

func (e *TooOldError) Error() string {
	return fmt.Sprintf("runsc %s is older than release %d", e.Version.Version, MinRelease)
}

// ErrNoRunsc means no runsc binary was found.
var ErrNoRunsc = errors.New("runsc not found")

// New finds runsc, checks its version and sweeps what earlier runs left in
// the state directory and the cgroups.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	r, err := newRuntime(cfg)
	if err != nil {
		return nil, err
	}
	if err := r.start(ctx); err != nil {
		r.Close()
		return nil, err
	}
	r.log.Info("gvisor runtime ready", "runsc", r.runsc, "version", r.version.Version, "platform", r.platform)
	return r, nil
}

// start checks runsc's version, makes the state directory and sweeps what a runtime before
// left behind.
func (r *Runtime) start(ctx context.Context) (err error) {
	if r.version, err = r.Version(ctx); err != nil {
		return err
	}
	if r.version.Release < MinRelease {
		return &TooOldError{Version: r.version}
	}
	if err := os.MkdirAll(r.state, 0o700); err != nil {
		return fmt.Errorf("creating runsc state directory: %w", err)
	}
	return r.Sweep(ctx)
}

// Close takes the runtime's series off its registry, so a runtime made later on it
// registers anew. Sandboxes still running are each ended by their own run.
func (r *Runtime) Close() { r.metrics.unregister() }

func newRuntime(cfg Config) (*Runtime, error) {
	bin := cfg.Runsc
	if bin == "" {
		p, err := exec.LookPath("runsc")
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoRunsc, err)
		}
		bin = p
	}
	if cfg.StateDir == "" {
		return nil, errors.New("gvisor: no state directory")
	}
	state, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("resolving state directory: %w", err)
	}
	r := &Runtime{runsc: bin, state: state, platform: cfg.Platform, cgroups: cfg.CgroupRoot, grace: cfg.SweepGrace, log: cfg.Logger}
	if r.grace <= 0 {
		r.grace = SweepGrace
	}
	if r.platform == "" {
		r.platform = DefaultPlatform
	}
	if r.cgroups == "" {
		r.cgroups = "/sys/fs/cgroup"
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.metrics, err = newMetrics(cfg.Registerer)
	return r, err
}

// Version runs `runsc --version`.
func (r *Runtime) Version(ctx context.Context) (Version, error) {
	out, err := exec.CommandContext(ctx, r.runsc, "--version").Output()
	if err != nil {
		return Version{}, fmt.Errorf("running runsc --version: %w", err)
	}
	return ParseVersion(string(out))
}

// Platform is the runsc platform runs use.
func (r *Runtime) Platform() string { return r.platform }

// Describe is the runtime as sandbox.Observation records it.
func (r *Runtime) Describe() sandbox.Runtime { return r.version.Sandbox(r.platform) }

var releaseRE = regexp.MustCompile(`(?:^|[~-])(\d{8})(?:\.\d+)?`)

// ParseVersion reads the two lines of `runsc --version`: "runsc version X"
// and "spec: Y".
func ParseVersion(text string) (Version, error) {
	var v Version
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if s, ok := strings.CutPrefix(line, "runsc version "); ok {
			v.Version = strings.TrimSpace(s)
		} else if s, ok := strings.CutPrefix(line, "spec:"); ok {
			v.Spec = strings.TrimSpace(s)
		}
	}
	if v.Version == "" {
		return Version{}, fmt.Errorf("parsing runsc --version: no version line in %q", text)
	}
	if m := releaseRE.FindStringSubmatch(v.Version); m != nil {
		v.Release, _ = strconv.Atoi(m[1])
	}
	return v, nil
}

// control runs one runsc control command with its own timeout.
func (r *Runtime) control(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.runsc, append([]string{"--root", r.state}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("runsc %s: %w: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// leftover reports whether runsc state or a cgroup of container id exists.
func (r *Runtime) leftover(id string) bool {
	return r.live(id) || len(r.cgroupDirs(id)) > 0
}

// destroy kills and deletes container id and removes its cgroups. Every
// step runs whatever the one before did; the errors are only logged,
// because a container that already ended has nothing to kill.
func (r *Runtime) destroy(id string) {
	r.signal(id)
	r.delete(id)
}

// signal sends KILL to container id's processes (runsc kill).
func (r *Runtime) signal(id string) {
	if _, err := r.control("kill", id, "KILL"); err != nil {
		r.log.Debug("runsc kill", "id", id, "err", err)
	}
}

// delete force-deletes container id and removes its cgroups.
func (r *Runtime) delete(id string) {
	if _, err := r.control("delete", "-force", id); err != nil {
		r.log.Debug("runsc delete", "id", id, "err", err)
	}
	for _, dir := range r.cgroupDirs(id) {
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.log.Warn("removing sandbox cgroup", "dir", dir, "err", err)
		}
	}
}
