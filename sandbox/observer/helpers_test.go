package observer

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/histor-observer/histor/sandbox"
)

// needSandbox skips a test that needs runsc as root and the built roots.
func needSandbox(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: runsc run, network namespaces and cgroups")
	}
	for _, bin := range []string{"runsc", "ip", "iptables", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed (scripts/test installs it)", bin)
		}
	}
	dir := os.Getenv("HISTOR_ROOTFS_CACHE")
	if dir == "" {
		t.Skip("HISTOR_ROOTFS_CACHE is unset: scripts/test points it at the built Debian roots")
	}
	for _, k := range []string{"node.json", "python.json"} {
		if _, err := os.Stat(filepath.Join(dir, k)); err != nil {
			t.Skipf("no built root in HISTOR_ROOTFS_CACHE (histor sandbox roots builds them): %v", err)
		}
	}
	return dir
}

// newTestObserver is an Observer over the cached roots (trusted, not
// re-digested: the digest is checked by TestRootsChecked), with cfg's
// fields where set.
func newTestObserver(t testing.TB, cfg Config) *Observer {
	t.Helper()
	cfg.RootfsDir = needSandbox(t)
	if cfg.WorkDir == "" {
		cfg.WorkDir = t.TempDir()
	}
	if !cfg.SkipRootCheck {
		cfg.SkipRootCheck = true
	}
	o, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if left, _ := os.ReadDir(o.path("runs")); len(left) > 0 {
			t.Errorf("run directories left behind: %v", left)
		}
		if err := o.Close(); err != nil {
			t.Error(err)
		}
		assertNoRuns(t, o.inst.dir)
	})
	return o
}

// assertNoRuns checks that the closed Observer left nothing: its own
// directory under the work directory is gone.
func assertNoRuns(t testing.TB, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the observer left %s behind (%v)", dir, err)
	}
}

// needNPM skips a test that needs the npm registry, after a cheap probe.
func needNPM(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("installs from the npm registry; skipped under -short")
	}
	if os.Getenv("HISTOR_OFFLINE") != "" {
		t.Skip("HISTOR_OFFLINE is set")
	}
}

func observe(t testing.TB, o *Observer, spec string, opts Options) *sandbox.Observation {
	t.Helper()
	obs, err := o.Observe(context.Background(), spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	short := *obs
	short.Tools, short.Limits = nil, sandbox.Limits{}
	data, _ := json.Marshal(short)
	t.Logf("%s: %s", spec, data)
	return obs
}

func toolNames(tools []any) []string {
	var out []string
	for _, tool := range tools {
		m, _ := tool.(map[string]any)
		name, _ := m["name"].(string)
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func hasUse(uses []sandbox.PlaceholderUse, name, where string) bool {
	for _, u := range uses {
		if u.Name == name && (where == "" || u.Where == where) {
			return true
		}
	}
	return false
}
