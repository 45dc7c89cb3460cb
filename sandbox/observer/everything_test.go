package observer

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/gvisor"
	"github.com/histor-observer/histor/sandbox/stdio"
)

// everythingVersion is the release scripts/test installs (crawl/mcpclient
// pins the same).
const everythingVersion = "2026.8.31"

const everythingSpec = "npm:@modelcontextprotocol/server-everything@" + everythingVersion

// outsideEverything lists the tools of the server-everything release that
// scripts/test installs into HISTOR_NPM_DIR, run on the host outside any
// sandbox by a plain stdio client that declares no capabilities and calls
// nothing.
func outsideEverything(t *testing.T) *stdio.Result {
	t.Helper()
	dir := os.Getenv("HISTOR_NPM_DIR")
	if dir == "" {
		t.Skip("HISTOR_NPM_DIR is unset: scripts/test installs server-everything there")
	}
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Skipf("server-everything is not installed in HISTOR_NPM_DIR: %v", err)
	}
	cmd := exec.Command("node", entry, "stdio")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	r := stdio.Talk(context.Background(), stdio.Config{MaxCalls: -1}, stdio.Run{Stdin: in, Stdout: out, Started: time.Now(),
		Canary: stdio.Canary{Run: "outside", DecoyPath: "/nonexistent"}})
	if r.Status != sandbox.StatusOK {
		t.Fatalf("outside the sandbox: status %s (%s)", r.Status, r.Detail)
	}
	return r
}

// TestServerEverything observes the reference server in the sandbox: the
// same tools and MTL/1 digest a plain client gets outside it, and get-env's
// answer hands back the placeholders of the declared variables, recorded as
// placeholder uses of the calls phase. Its calls look up a name: the C
// library first tries nscd's unix socket, whose address this runsc never
// prints, so the calls phase stays incomplete (never complete with
// something unattributed), while startup, which does nothing of the kind,
// is complete, and the lookup's own traffic to the resolver is no finding.
func TestServerEverything(t *testing.T) {
	needNPM(t)
	outside := outsideEverything(t)
	want, err := mtl.Digest(outside.Tools)
	if err != nil {
		t.Fatal(err)
	}
	o := newTestObserver(t, Config{})
	obs := observe(t, o, everythingSpec, Options{Env: []string{"API_KEY", "EVERYTHING_TOKEN"}})
	if obs.Status != sandbox.StatusOK {
		t.Fatalf("status %s (%s)", obs.Status, obs.Detail)
	}
	if got, wantNames := toolNames(obs.Tools), toolNames(outside.Tools); !slices.Equal(got, wantNames) {
		t.Errorf("tools %v, outside %v", got, wantNames)
	}
	if obs.ToolSetDigest != want {
		t.Errorf("digest %s, outside the sandbox %s", obs.ToolSetDigest, want)
	}
	for _, name := range []string{"API_KEY", "EVERYTHING_TOKEN"} {
		if !hasUse(obs.Behaviour.Calls.Placeholders, name, "tool get-env") {
			t.Errorf("no placeholder use of %s in get-env's answer: %+v", name, obs.Behaviour.Calls.Placeholders)
		}
	}
	if !slices.ContainsFunc(obs.Calls.Outcomes, func(c sandbox.CallOutcome) bool { return c.Tool == "get-env" && c.Status == stdio.OutcomeSuccess }) {
		t.Errorf("get-env not called with success: %+v", obs.Calls.Outcomes)
	}
	st, calls := obs.Behaviour.Startup, obs.Behaviour.Calls
	if !st.Complete || calls.Complete || !slices.Equal(calls.IncompleteReasons, []string{gvisor.ReasonUnresolvedSocket}) || obs.Behaviour.Complete {
		t.Errorf("startup %v %q, calls %v %q, behaviour %v", st.Complete, st.IncompleteReasons, calls.Complete, calls.IncompleteReasons, obs.Behaviour.Complete)
	}
	if slices.ContainsFunc(calls.Network, func(a sandbox.NetworkAttempt) bool { return a.Port == 53 || a.Protocol == "tcp" }) {
		t.Errorf("the resolver's traffic or a connect the trap recorded listed as its own attempt: %+v", calls.Network)
	}
	if strings.Contains(obs.Detail, "stderr") {
		t.Errorf("detail %q", obs.Detail)
	}
}
