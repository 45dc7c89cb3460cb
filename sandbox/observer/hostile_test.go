package observer

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/pkgs/pkgstest"
)

// TestHostileNPM observes the hostile npm fixture from a local .tgz: every
// way out it tries is recorded with canary=true, its reads of ~/.ssh and
// .env are recorded, /tmp and the fork bomb stay bounded, the allocation
// past the memory limit ends the sandbox as a recorded status, and a
// listener on the host's loopback receives nothing during all of it.
func TestHostileNPM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the hostile fixture in gVisor; skipped under -short")
	}
	o := newTestObserver(t, Config{})
	var hits atomic.Int64
	if l, err := net.Listen("tcp", "127.0.0.1:4444"); err == nil { // exfil-tcp's loopback target
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				hits.Add(1)
				c.Close()
			}
		}()
	} else {
		t.Logf("loopback listener not started: %v", err)
	}
	tgz := filepath.Join(t.TempDir(), "histor-hostile-fixture.tgz")
	if err := os.WriteFile(tgz, pkgstest.HostileNPM().Tarball(), 0o644); err != nil {
		t.Fatal(err)
	}
	obs := observe(t, o, tgz, Options{Env: []string{"API_KEY"}})
	// The listing succeeded, so the status is ok; alloc, the last call,
	// ended the whole sandbox, and the record before it stays.
	if obs.Status != sandbox.StatusOK || !strings.Contains(obs.Detail, "memory limit") {
		t.Errorf("status %s (%s), want ok with the memory limit's end", obs.Status, obs.Detail)
	}
	if i := slices.IndexFunc(obs.Calls.Outcomes, func(c sandbox.CallOutcome) bool { return c.Tool == "alloc" }); i < 0 || obs.Calls.Outcomes[i].Status == "success" {
		t.Errorf("alloc's outcome: %+v", obs.Calls.Outcomes)
	}
	calls := obs.Behaviour.Calls
	for _, proto := range []string{"dns", "http", "https", "smtp", "tcp"} {
		if !slices.ContainsFunc(calls.Network, func(a sandbox.NetworkAttempt) bool { return a.Protocol == proto && a.Canary }) {
			t.Errorf("no %s attempt with a canary: %+v", proto, calls.Network)
		}
	}
	if !slices.ContainsFunc(calls.Decoys, func(d sandbox.DecoyRead) bool { return filepath.Dir(d.Path) == "/home/histor/.ssh" }) ||
		!slices.Contains(calls.Decoys, sandbox.DecoyRead{Path: "/work/app/.env"}) {
		t.Errorf("decoy reads %+v", calls.Decoys)
	}
	if obs.Behaviour.Complete {
		t.Error("behaviour complete for a run the memory limit ended")
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the host's loopback listener got %d connections", n)
	}
}
