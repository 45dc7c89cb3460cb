package gvisor

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// needRunsc skips a test that needs a real runsc as root.
func needRunsc(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: runsc run creates cgroups and namespaces")
	}
	if _, err := exec.LookPath("runsc"); err != nil {
		t.Skip("runsc is not installed")
	}
}

func newTestRuntime(t testing.TB) *Runtime {
	t.Helper()
	needRunsc(t)
	rt, err := New(context.Background(), Config{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// bindRoot builds a root filesystem from the host's own /usr and /etc: an
// almost empty directory with mount points and the merged-/usr symlinks, and
// the two read-only bind mounts that fill it.
func bindRoot(t testing.TB) (string, []Mount) {
	t.Helper()
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"usr", "etc", "proc", "dev", "sys", "tmp", "work", "home"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		if err := os.Symlink("usr/"+l, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	return root, []Mount{{Source: "/usr", Destination: "/usr"}, {Source: "/etc", Destination: "/etc"}}
}

func testRun(t testing.TB, args ...string) Run {
	root, mounts := bindRoot(t)
	return Run{ID: NewID(), Root: root, Mounts: mounts, Args: args, UID: 65534, GID: 65534}
}

type result struct {
	stdout, stderr string
	exit           Exit
}

// runIn starts r, waits for it with timeout, and returns what it wrote.
func runIn(t testing.TB, rt *Runtime, r Run, timeout time.Duration) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out, errb bytes.Buffer
	r.Stdout, r.Stderr = &out, &errb
	if r.Stdin == nil {
		r.Stdin = strings.NewReader("")
	}
	s, err := rt.Start(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	exit := s.Wait()
	return result{out.String(), errb.String(), exit}
}

// assertGone checks that nothing of run id is left: no runsc state entry,
// no cgroup.
func assertGone(t testing.TB, rt *Runtime, id string) {
	t.Helper()
	out, err := rt.control("list", "-quiet")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), id) {
		t.Errorf("runsc list still has %s", id)
	}
	if dirs := rt.cgroupDirs(id); len(dirs) > 0 {
		t.Errorf("cgroups left behind: %v", dirs)
	}
}
