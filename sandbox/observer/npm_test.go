package observer

import (
	"slices"
	"testing"

	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/rootfs"
)

// TestReferenceServers observes two reference servers from the npm
// registry: each ends ok with its tools and a digest, and, doing nothing
// on the network and reading no decoy, both phases of its behaviour are
// complete. sequential-thinking's every call succeeds, so its behaviour is
// complete; server-memory writes its graph to memory.jsonl beside its own
// code, which the run mounts read-only, so its six writing tools answer an
// error, coverage is incomplete and so is its behaviour (HISTOR's rule:
// only a fully successful call phase is complete).
func TestReferenceServers(t *testing.T) {
	needNPM(t)
	o := newTestObserver(t, Config{InstallCache: t.TempDir()})
	digests := map[string]string{}
	for _, tc := range []struct {
		spec     string
		tool     string
		complete bool // the whole behaviour; both phases always are
	}{
		{"npm:@modelcontextprotocol/server-memory@2026.8.31", "create_entities", false},
		{"npm:@modelcontextprotocol/server-sequential-thinking@2026.8.31", "sequentialthinking", true},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			var stages []string
			obs := observe(t, o, tc.spec, Options{Progress: func(s sandbox.Stage) { stages = append(stages, s.Name+"="+s.Status) }})
			if obs.Status != sandbox.StatusOK {
				t.Fatalf("status %s (%s)", obs.Status, obs.Detail)
			}
			digests[tc.spec] = obs.ToolSetDigest
			if !slices.Contains(toolNames(obs.Tools), tc.tool) || obs.ToolSetDigest == "" {
				t.Errorf("tools %v, digest %q", toolNames(obs.Tools), obs.ToolSetDigest)
			}
			if obs.Runtime.Root != "node" || obs.Runtime.RootDigest == "" || obs.Runtime.Version == "" || obs.Runtime.Network != "traps" {
				t.Errorf("runtime %+v", obs.Runtime)
			}
			if want := []string{"resolve=ok", "install=ok", "run=ok", "talk=ok"}; !slices.Equal(stages, want) {
				t.Errorf("stages %v, want %v", stages, want)
			}
			b := obs.Behaviour
			for _, p := range []sandbox.Phase{b.Startup, b.Calls} {
				if !p.Complete || len(p.IncompleteReasons) > 0 || len(p.Network) > 0 || len(p.Decoys) > 0 || len(p.Writes) > 0 {
					t.Errorf("phase %+v, want complete and empty", p)
				}
			}
			if b.Complete != tc.complete || b.Complete != obs.Calls.Complete {
				t.Errorf("behaviour complete %v, calls complete %v (%+v), want %v", b.Complete, obs.Calls.Complete, obs.Calls.Outcomes, tc.complete)
			}
		})
	}
	// The second run of a version reads the install its first run left in
	// the cache (on another file system than the run's tmpfs) and sees the
	// same tools. It runs as a job that asks for less memory and two calls,
	// and for more time than the observer allows: it gets the less, never
	// the more, and records what it had.
	spec := "npm:@modelcontextprotocol/server-memory@2026.8.31"
	want := o.Limits()
	want.MemoryBytes, want.Calls = 256<<20, 2
	again := observe(t, o, spec, Options{Limits: &sandbox.Limits{MemoryBytes: 256 << 20, Calls: 2, RunSeconds: 10 * want.RunSeconds}})
	if again.Status != sandbox.StatusOK || again.Install.Detail != "installed before; reused by integrity" || again.ToolSetDigest != digests[spec] {
		t.Errorf("second run: status %s, install %+v, digest %s (first %s)", again.Status, again.Install, again.ToolSetDigest, digests[spec])
	}
	if again.Limits != want || again.Calls.Attempted != 2 {
		t.Errorf("second run had limits %+v and attempted %d calls; want %+v and 2", again.Limits, again.Calls.Attempted, want)
	}
	// The roots are shared and mounted read-only: nothing a run does may
	// change them (a mount point runsc had to create once did).
	rc := &rootfs.Cache{Dir: o.cfg.RootfsDir}
	if _, err := rc.Check(rootfs.Node); err != nil {
		t.Errorf("node root after the runs: %v", err)
	}
}
