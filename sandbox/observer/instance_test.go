package observer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/sandbox/gvisor"
	"github.com/histor-observer/histor/sandbox/rootfs"
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
