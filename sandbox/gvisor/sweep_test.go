package gvisor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestSweepSparesFresh sweeps a cgroup tree of its own: only leftovers older
// than the grace whose container has no state here are removed; a fresh
// cgroup (another runtime's run that is starting), one whose container is
// live in the state directory, and anything not ours stay.
func TestSweepSparesFresh(t *testing.T) {
	bin, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1) to stand in for runsc list")
	}
	cg, state := t.TempDir(), t.TempDir()
	old := time.Now().Add(-SweepGrace - time.Minute)
	dirs := map[string]bool{ // path under cg: removed by the sweep
		"memory/" + CgroupParent + "/" + IDPrefix + "old": true,
		"cpu/" + CgroupParent + "/" + IDPrefix + "old":    true,
		"memory/runsc-12":                                   true,
		CgroupParent + "/" + IDPrefix + "old2":              true, // cgroup v2
		"memory/" + CgroupParent + "/" + IDPrefix + "fresh": false,
		"memory/" + CgroupParent + "/" + IDPrefix + "live":  false,
		"memory/" + CgroupParent + "/other-old":             false,
		"memory/system.slice":                               false,
	}
	for d := range dirs {
		p := filepath.Join(cg, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if filepath.Base(d) != IDPrefix+"fresh" {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(state, IDPrefix+"live_sandbox:"+IDPrefix+"live.state"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rt, err := newRuntime(Config{Runsc: bin, StateDir: state, CgroupRoot: cg})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	for d, removed := range dirs {
		_, err := os.Stat(filepath.Join(cg, d))
		if gone := os.IsNotExist(err); gone != removed {
			t.Errorf("%s: removed %v, want %v", d, gone, removed)
		}
	}
}

// TestSweepRacesStart runs sandboxes in one runtime while another runtime
// (its own state directory, as a second observer on the host has) sweeps
// again and again: no run may lose its cgroup to the other's sweep.
func TestSweepRacesStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sandboxes while another runtime sweeps; skipped under -short")
	}
	a, b := newTestRuntime(t), newTestRuntime(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	sweeps := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := b.Sweep(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("sweep: %v", err)
			}
			sweeps++
		}
	}()
	for i := range 4 {
		r := testRun(t, "/usr/bin/true")
		res := runIn(t, a, r, time.Minute)
		if res.exit.End != EndExited || res.exit.Code != 0 {
			t.Errorf("run %d beside a sweeping runtime: %s, stderr %q", i, res.exit, res.stderr)
		}
		assertGone(t, a, r.ID)
	}
	cancel()
	wg.Wait()
	t.Logf("%d sweeps during the runs", sweeps)
}
