package rootfs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Kind names a root: which runtime the packages it runs need.
type Kind string

// The kinds of root.
const (
	Node   Kind = "node"
	Python Kind = "python"
)

// Defaults of Spec.
const (
	DefaultSuite  = "trixie"
	DefaultMirror = "http://deb.debian.org/debian"
	// DefaultSourceDateEpoch fixes every timestamp the build writes
	// (2025-08-09, trixie's release), so two builds of the same package
	// versions are byte-identical.
	DefaultSourceDateEpoch = 1754697600
	DefaultBuildTimeout    = 15 * time.Minute
)

// Packages returns the Debian packages a kind of root is built from. npm
// is in the node root because installs run inside the sandbox too; the
// python root has no pip: wheels are unpacked on the host (pip --target)
// and only the interpreter runs inside.
func Packages(k Kind) ([]string, error) {
	switch k {
	case Node:
		return []string{"nodejs", "npm", "bash", "git", "ca-certificates"}, nil
	case Python:
		return []string{"python3", "bash", "git", "ca-certificates"}, nil
	}
	return nil, fmt.Errorf("unknown root kind %q", k)
}

// MountPoints are the empty directories the runner mounts over, and
// EmptyFiles the files it bind-mounts over. Build adds them so the root can
// stay read-only.
var (
	MountPoints = []string{"tmp", "home/histor", "work/pkg", "work/app"}
	EmptyFiles  = []string{"etc/resolv.conf"}
)

// Spec says what to build and where.
type Spec struct {
	Kind Kind
	// Dir is where the root is written; it must not exist yet.
	Dir string
	// Suite is the Debian release (default trixie: Node.js 20.19, Python 3.13).
	Suite string
	// Mirror is the Debian archive to fetch from (default deb.debian.org).
	Mirror string
	// Packages overrides the kind's package list (Packages(Kind)).
	Packages []string
	// SourceDateEpoch is passed to mmdebstrap (default DefaultSourceDateEpoch).
	SourceDateEpoch int64
	// Timeout bounds the whole build (default 15 minutes).
	Timeout time.Duration
	// Mmdebstrap is the program to run (default "mmdebstrap" on PATH).
	Mmdebstrap string
}

func (s Spec) withDefaults() (Spec, error) {
	if s.Suite == "" {
		s.Suite = DefaultSuite
	}
	if s.Mirror == "" {
		s.Mirror = DefaultMirror
	}
	if len(s.Packages) == 0 {
		pkgs, err := Packages(s.Kind)
		if err != nil {
			return s, err
		}
		s.Packages = pkgs
	}
	if s.SourceDateEpoch == 0 {
		s.SourceDateEpoch = DefaultSourceDateEpoch
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultBuildTimeout
	}
	if s.Mmdebstrap == "" {
		s.Mmdebstrap = "mmdebstrap"
	}
	return s, nil
}

// Package is one installed Debian package, as dpkg-query -W lists it.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Root is a built root filesystem and what it is made of.
type Root struct {
	Kind     Kind      `json:"kind"`
	Dir      string    `json:"-"`
	Digest   string    `json:"digest"` // sha256:<hex> of the tar stream Digest writes
	Suite    string    `json:"suite"`
	Mirror   string    `json:"mirror"`
	Packages []string  `json:"packages"` // what was asked for
	Dpkg     []Package `json:"dpkg"`     // what is installed, sorted by name
	// Node and Python are the nodejs and python3 package versions ("" if absent).
	Node   string `json:"node,omitempty"`
	Python string `json:"python,omitempty"`

	Files        int       `json:"files"`
	Bytes        int64     `json:"bytes"` // regular files' apparent size
	BuiltAt      time.Time `json:"builtAt"`
	BuildSeconds float64   `json:"buildSeconds"`
}

// BuildError is a failed mmdebstrap run, with the end of what it said.
type BuildError struct {
	Err  error
	Tail string // the last lines of mmdebstrap's stderr
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("mmdebstrap: %v: %s", e.Err, e.Tail)
}

func (e *BuildError) Unwrap() error { return e.Err }

// Build runs mmdebstrap (minbase variant) into spec.Dir, adds the mount
// points, and digests the result. On failure spec.Dir may hold a partial
// tree; the caller removes it (Cache.Ensure builds in a temporary directory).
// mmdebstrap needs root here (it is run in its default mode).
func Build(ctx context.Context, spec Spec) (*Root, Manifest, error) {
	spec, err := spec.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(spec.Dir); err == nil {
		return nil, nil, fmt.Errorf("building root: %s already exists", spec.Dir)
	}
	start := time.Now()
	if err := runMmdebstrap(ctx, spec); err != nil {
		return nil, nil, err
	}
	if err := addMountPoints(spec.Dir); err != nil {
		return nil, nil, err
	}
	dpkg, err := listPackages(ctx, spec.Dir)
	if err != nil {
		return nil, nil, err
	}
	digest, m, err := Digest(spec.Dir)
	if err != nil {
		return nil, nil, err
	}
	r := &Root{
		Kind: spec.Kind, Dir: spec.Dir, Digest: digest, Suite: spec.Suite, Mirror: spec.Mirror,
		Packages: spec.Packages, Dpkg: dpkg, Node: versionOf(dpkg, "nodejs"), Python: versionOf(dpkg, "python3"),
		BuiltAt: start.UTC().Truncate(time.Second), BuildSeconds: time.Since(start).Seconds(),
	}
	r.Files, r.Bytes = m.size()
	return r, m, nil
}

func (m Manifest) size() (files int, bytes int64) {
	for _, e := range m {
		bytes += e.Size
	}
	return len(m), bytes
}

// runMmdebstrap runs the build under spec.Timeout, in its own process group
// so apt and dpkg die with it.
func runMmdebstrap(ctx context.Context, spec Spec) error {
	ctx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, spec.Mmdebstrap, "--variant=minbase", "--mode=root",
		"--include="+strings.Join(spec.Packages, ","), spec.Suite, spec.Dir, spec.Mirror)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.FormatInt(spec.SourceDateEpoch, 10), "LC_ALL=C.UTF-8")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	tail := &tailBuffer{max: 4 << 10}
	cmd.Stderr = tail
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w after %s", ctx.Err(), spec.Timeout)
		}
		return &BuildError{Err: err, Tail: tail.lastLines(12)}
	}
	return nil
}

// addMountPoints creates the runner's mount points in the new root.
func addMountPoints(dir string) error {
	for _, p := range MountPoints {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			return fmt.Errorf("adding mount point /%s: %w", p, err)
		}
	}
	// /tmp is a tmpfs at run time; its mode in the image is what a reader sees without one.
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o777|os.ModeSticky); err != nil {
		return fmt.Errorf("adding mount point /tmp: %w", err)
	}
	for _, p := range EmptyFiles {
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			return fmt.Errorf("adding mount point /%s: %w", p, err)
		}
	}
	return nil
}

// listPackages reads the root's dpkg database from outside it.
func listPackages(ctx context.Context, dir string) ([]Package, error) {
	out, err := exec.CommandContext(ctx, "dpkg-query", "--admindir="+filepath.Join(dir, "var/lib/dpkg"),
		"-W", "-f=${Package}\t${Version}\n").Output()
	if err != nil {
		return nil, fmt.Errorf("listing packages of %s: %w", dir, err)
	}
	var pkgs []Package
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, version, ok := strings.Cut(sc.Text(), "\t")
		if ok && name != "" {
			pkgs = append(pkgs, Package{Name: name, Version: version})
		}
	}
	slices.SortFunc(pkgs, func(a, b Package) int { return strings.Compare(a.Name, b.Name) })
	return pkgs, nil
}

func versionOf(pkgs []Package, name string) string {
	i, ok := slices.BinarySearchFunc(pkgs, name, func(p Package, n string) int { return strings.Compare(p.Name, n) })
	if !ok {
		return ""
	}
	return pkgs[i].Version
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// lastLines returns up to n of the last lines, control characters dropped.
func (t *tailBuffer) lastLines(n int) string {
	lines := strings.Split(strings.TrimSpace(strings.ToValidUTF8(string(t.buf), "?")), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' || r == 0x7f {
			return -1
		}
		return r
	}, strings.Join(lines, "\n"))
}
