package observer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/gvisor"
	"github.com/histor-observer/histor/sandbox/pkgs/pkgstest"
	"github.com/histor-observer/histor/sandbox/rootfs"
	"github.com/histor-observer/histor/sandbox/trap"
)

// TestSharedWorkDir: two Observers on one WorkDir (two processes'
// worth) each get a directory of their own, and the second's start leaves
// the first's running sandbox alone; a directory whose owner is gone, with
// a run's tmpfs still mounted in it, is swept by the next Observer.
func TestSharedWorkDir(t *testing.T) {
	work := t.TempDir()
	a := newTestObserver(t, Config{WorkDir: work})
	sb, err := a.runtime.Start(context.Background(), gvisor.Run{ID: gvisor.NewID(), Root: a.roots[rootfs.Node].Dir,
		Args: []string{"/bin/sleep", "60"}, UID: sandboxUID, GID: sandboxUID})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { sb.Kill(); sb.Wait() }()

	// An abandoned instance: its lock free, a run's tmpfs still mounted.
	dead := filepath.Join(work, instancePrefix+"dead")
	runDir := filepath.Join(dead, "runs", "r1")
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead, lockName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := boundDir(runDir, 1<<20); err != nil {
		t.Fatal(err)
	}
	// Its other run's trap network, opened by a pool nobody closes (the owner died).
	tag := newTag()
	if err := os.MkdirAll(filepath.Join(dead, "runs", tag+"-12345"), 0o700); err != nil {
		t.Fatal(err)
	}
	pool, err := trap.NewPool(trap.Config{CAFile: filepath.Join(t.TempDir(), "ca.pem")})
	if err != nil {
		t.Fatal(err)
	}
	left, err := pool.Open(context.Background(), networkID("run", tag))
	if err != nil {
		t.Fatal(err)
	}
	defer left.Close()
	leftNS := []string{"/var/run/netns/" + trap.SandboxPrefix + networkID("run", tag), "/var/run/netns/" + trap.TrapPrefix + networkID("run", tag)}
	for _, ns := range leftNS {
		if _, err := os.Stat(ns); err != nil {
			t.Fatalf("the left network's namespace: %v", err)
		}
	}

	b := newTestObserver(t, Config{WorkDir: work})
	if a.inst.dir == b.inst.dir || !strings.HasPrefix(b.inst.dir, work+"/"+instancePrefix) {
		t.Fatalf("instance dirs %s and %s", a.inst.dir, b.inst.dir)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the abandoned instance is still there: %v", err)
	}
	if m, _ := mountsUnder(dead); len(m) > 0 {
		t.Errorf("its tmpfs is still mounted: %v", m)
	}
	for _, ns := range leftNS {
		if _, err := os.Stat(ns); !os.IsNotExist(err) {
			t.Errorf("the left network's namespace %s is still there: %v", ns, err)
		}
	}
	select {
	case <-time.After(2 * time.Second):
	case <-waitChan(sb):
		t.Fatalf("the first observer's sandbox ended when the second started: %+v", sb.Wait())
	}
}

func waitChan(sb *gvisor.Sandbox) <-chan struct{} {
	c := make(chan struct{})
	go func() { sb.Wait(); close(c) }()
	return c
}

// TestJobInstallBound: a job that allows the install less time than the
// install takes ends install-failed, naming the job's bound, not as a
// registry failure that would send the job round again.
func TestJobInstallBound(t *testing.T) {
	npm := pkgstest.NewNPMRegistry(t)
	npm.Add(pkgstest.NPMPackage{Name: "slow-install", Version: "1.0.0",
		Manifest: map[string]any{"bin": map[string]any{"slow-install": "index.js"}},
		Files:    map[string]string{"index.js": "process.exit(0)\n"}})
	o := newTestObserver(t, Config{NPMRegistry: npm.URL})
	obs := observe(t, o, "npm:slow-install@1.0.0", Options{Limits: &sandbox.Limits{InstallSeconds: 0.001}})
	if obs.Status != sandbox.StatusInstallFailed || !strings.Contains(obs.Detail, "job's bound") ||
		obs.Install.Detail != obs.Detail || obs.Limits.InstallSeconds != 0.001 {
		t.Fatalf("status %s (%s), limits %+v", obs.Status, obs.Detail, obs.Limits)
	}
}
