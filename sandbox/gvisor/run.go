package gvisor

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// Run is one process to start in a sandbox.
type Run struct {
	// ID names the container; it must begin with IDPrefix (NewID makes one).
	ID string
	// Root is an existing root filesystem directory, mounted read-only. It
	// must hold an empty directory for every mount destination.
	Root string
	// Mounts are bind mounts, always nosuid and nodev.
	Mounts []Mount
	// TmpBytes sizes the tmpfs on /tmp; 0 means 64 MiB.
	TmpBytes int64
	// Args is the command; Args[0] is a path inside the sandbox.
	Args []string
	// Env is the environment. PATH and HOME are added when missing (HOME=/tmp,
	// the one directory an unprivileged uid can always write).
	Env []string
	// Cwd is the working directory; empty means /.
	Cwd string
	// UID and GID the process runs as; 0 is refused (use e.g. 65534).
	UID, GID uint32
	// Limits bound the sandbox; zero members take DefaultLimits' values.
	Limits Limits
	// NetNS is the path of a network namespace whose interfaces the sandbox
	// takes over (e.g. /var/run/netns/sbx); empty means no network at all.
	NetNS string
	// Trace, when set, makes runsc trace syscalls into Trace.Dir.
	Trace *Tracing
	// Stdin, Stdout and Stderr are copied through pipes, never handed to
	// runsc as files (it writes a regular file from offset 0, over what was
	// there). A nil one is a pipe on the Sandbox instead (Sandbox.Stdin...).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Mount is a bind mount.
type Mount struct {
	Source      string // host path
	Destination string // absolute path inside the sandbox
	Writable    bool   // read-only unless set; the source must be writable by the run's uid
}

// Limits bound one sandbox.
type Limits struct {
	MemoryBytes int64   // memory, and memory+swap, limit
	CPUs        float64 // CPU quota in CPUs
	Pids        int64   // tasks in the container
	OpenFiles   uint64  // RLIMIT_NOFILE
}

// DefaultLimits are the run stage's: 512 MiB, 1 CPU, 256 tasks, 1024 files.
func DefaultLimits() Limits {
	return Limits{MemoryBytes: 512 << 20, CPUs: 1, Pids: 256, OpenFiles: 1024}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MemoryBytes == 0 {
		l.MemoryBytes = d.MemoryBytes
	}
	if l.CPUs == 0 {
		l.CPUs = d.CPUs
	}
	if l.Pids == 0 {
		l.Pids = d.Pids
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = d.OpenFiles
	}
	return l
}

// Tracing asks runsc to log syscalls, from outside the sandbox, into Dir.
type Tracing struct {
	Dir      string   // gets runsc.log.*.{run,gofer,boot}.txt; one directory per run
	Syscalls []string // nil means TraceSyscalls
	LogSize  int      // bytes of each argument logged; 0 means 512
}

// TraceSyscalls are the syscalls HISTOR traces.
var TraceSyscalls = []string{"socket", "connect", "openat", "open", "execve", "execveat",
	"sendto", "sendmsg", "sendmmsg", "bind", "unlinkat", "renameat", "mkdirat"}

func (t *Tracing) flags() []string {
	calls, size := t.Syscalls, t.LogSize
	if calls == nil {
		calls = TraceSyscalls
	}
	if size == 0 {
		size = 512
	}
	return []string{"--strace", "--strace-syscalls=" + strings.Join(calls, ","),
		fmt.Sprintf("--strace-log-size=%d", size), "--debug-log=" + filepath.Clean(t.Dir) + "/"}
}

// NewID returns a fresh container ID with IDPrefix.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return IDPrefix + hex.EncodeToString(b[:])
}

var idRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,100}$`)

// ErrInvalidRun is wrapped by every refusal of a Run before anything starts.
var ErrInvalidRun = errors.New("invalid sandbox run")

func (r *Run) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidRun, fmt.Sprintf(format, a...))
	}
	switch {
	case !strings.HasPrefix(r.ID, IDPrefix) || !idRE.MatchString(r.ID):
		return bad("id %q must match %s[a-z0-9_.-]", r.ID, IDPrefix)
	case !filepath.IsAbs(r.Root) || !isDir(r.Root):
		return bad("root %q is not an absolute directory", r.Root)
	case len(r.Args) == 0:
		return bad("no command")
	case r.UID == 0 || r.GID == 0:
		return bad("uid and gid must not be 0")
	case r.Trace != nil && !filepath.IsAbs(r.Trace.Dir):
		return bad("trace directory %q is not absolute", r.Trace.Dir)
	}
	for _, m := range r.Mounts {
		if !filepath.IsAbs(m.Source) || !path.IsAbs(m.Destination) || path.Clean(m.Destination) == "/" {
			return bad("mount %q on %q", m.Source, m.Destination)
		}
	}
	return nil
}
