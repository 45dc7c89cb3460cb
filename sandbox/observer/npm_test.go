package observer

import (
	"slices"
	"testing"

	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/rootfs"
)

// TestReferenceServers observes two reference servers from the npm
// registry: each ends ok with its tools and a digest.
func TestReferenceServers(t *testing.T) {
	needNPM(t)
	o := newTestObserver(t, Config{})
	for _, tc := range []struct {
		spec string
		tool string
	}{
		{"npm:@modelcontextprotocol/server-memory@2026.8.31", "create_entities"},
		{"npm:@modelcontextprotocol/server-sequential-thinking@2026.8.31", "sequentialthinking"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			var stages []string
			obs := observe(t, o, tc.spec, Options{Progress: func(s sandbox.Stage) { stages = append(stages, s.Name+"="+s.Status) }})
			if obs.Status != sandbox.StatusOK {
				t.Fatalf("status %s (%s)", obs.Status, obs.Detail)
			}
			if !slices.Contains(toolNames(obs.Tools), tc.tool) || obs.ToolSetDigest == "" {
				t.Errorf("tools %v, digest %q", toolNames(obs.Tools), obs.ToolSetDigest)
			}
			if obs.Runtime.Root != "node" || obs.Runtime.RootDigest == "" || obs.Runtime.Version == "" || obs.Runtime.Network != "traps" {
				t.Errorf("runtime %+v", obs.Runtime)
			}
			if want := []string{"resolve=ok", "install=ok", "run=ok", "talk=ok"}; !slices.Equal(stages, want) {
				t.Errorf("stages %v, want %v", stages, want)
			}
		})
	}
	// The roots are shared and mounted read-only: nothing a run does may
	// change them (a mount point runsc had to create once did).
	rc := &rootfs.Cache{Dir: o.cfg.RootfsDir}
	if _, err := rc.Check(rootfs.Node); err != nil {
		t.Errorf("node root after the runs: %v", err)
	}
}
