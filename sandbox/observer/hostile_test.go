package observer

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/pkgs/pkgstest"
	"github.com/histor-observer/histor/sandbox/stdio"
)

var (
	wroteRE   = regexp.MustCompile(`^wrote (\d+) bytes`)
	startedRE = regexp.MustCompile(`^started (\d+) children`)
)

// TestHostileNPM observes the hostile npm fixture from a local .tgz.
func TestHostileNPM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the hostile fixture in gVisor; skipped under -short")
	}
	o := newTestObserver(t, Config{})
	tgz := filepath.Join(t.TempDir(), "histor-hostile-fixture.tgz")
	if err := os.WriteFile(tgz, pkgstest.HostileNPM().Tarball(), 0o644); err != nil {
		t.Fatal(err)
	}
	checkHostile(t, o, tgz)
}

// TestHostileWheel observes the hostile wheel through the PyPI path: the
// local PEP 503 index, pip outside the sandbox, the Python root inside.
func TestHostileWheel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the hostile fixture in gVisor; skipped under -short")
	}
	x := pkgstest.NewPyPIIndex(t)
	w := pkgstest.HostileWheel()
	x.AddWheel(w)
	o := newTestObserver(t, Config{PyPI: x.URL, PyPIIndex: x.IndexURL()})
	obs := checkHostile(t, o, "pypi:"+w.Name+"=="+w.Version)
	if obs.Runtime.Root != "python" || obs.Registry != "pypi" {
		t.Errorf("root %q, registry %q", obs.Runtime.Root, obs.Registry)
	}
}

// checkHostile observes spec, a hostile fixture, while listeners on every
// address of the host (loopback and the others) wait on exfil-tcp's ports:
// every way out it tries is recorded with canary=true, its reads of ~/.ssh
// and .env are recorded, fill-tmp stops at the tmpfs bound (as its answer
// counts), fork-bomb at the pids bound or by ending the server, the
// allocation past the memory limit ends the sandbox as a recorded status,
// and no host listener receives anything.
func checkHostile(t *testing.T, o *Observer, spec string) *sandbox.Observation {
	t.Helper()
	host := listenOnHost(t, 4444, 22)
	got := answers(o)
	obs := observe(t, o, spec, Options{Env: []string{"API_KEY"}})
	// The listing succeeded, so the status is ok. fork-bomb stops at the
	// pids bound or ends the server (the Python one dies of it); alloc,
	// when reached, ends the whole sandbox at the memory limit, and the
	// record before it stays.
	if obs.Status != sandbox.StatusOK {
		t.Errorf("status %s (%s), want ok", obs.Status, obs.Detail)
	}
	outcome := func(tool string) sandbox.CallOutcome {
		i := slices.IndexFunc(obs.Calls.Outcomes, func(c sandbox.CallOutcome) bool { return c.Tool == tool })
		if i < 0 {
			t.Fatalf("no outcome for %s: %+v", tool, obs.Calls.Outcomes)
		}
		return obs.Calls.Outcomes[i]
	}
	l := o.cfg.Limits
	bomb, alloc := outcome("fork-bomb"), outcome("alloc")
	switch n, text := answerNumber(got(), "fork-bomb", startedRE); {
	case bomb.Status == stdio.OutcomeSuccess && (n <= 0 || n > int64(l.Pids)):
		t.Errorf("fork-bomb answered %q: want 0 < children <= %d", text, l.Pids)
	case bomb.Status != stdio.OutcomeSuccess && (!strings.Contains(bomb.Reason, "stdout ended") || alloc.Status != stdio.OutcomeSkipped):
		t.Errorf("fork-bomb %+v, alloc %+v: want the server ended by it and alloc skipped", bomb, alloc)
	}
	if alloc.Status == stdio.OutcomeSuccess || alloc.Status != stdio.OutcomeSkipped && !strings.Contains(obs.Detail, "memory limit") {
		t.Errorf("alloc %+v, detail %q: want the sandbox ended at the memory limit", alloc, obs.Detail)
	}
	_, bombText := answerNumber(got(), "fork-bomb", startedRE)
	_, fillText := answerNumber(got(), "fill-tmp", wroteRE)
	t.Logf("fill-tmp: %q; fork-bomb: %q (%s)", fillText, bombText, bomb.Status)
	if n, text := answerNumber(got(), "fill-tmp", wroteRE); n <= 0 || n > l.TmpBytes {
		t.Errorf("fill-tmp answered %q: want 0 < bytes <= %d", text, l.TmpBytes)
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
	host.assertNothing(t)
	return obs
}

// quietServer is a plain MCP server over stdio, standard library only: one
// tool, echo, that answers its text. It touches no file, process or socket.
const quietServer = `import json, sys

TOOLS = [{"name": "echo", "description": "Answers its text.",
          "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]


def answer(msg):
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                "serverInfo": {"name": "histor-quiet", "version": "1.0.0"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": str((params.get("arguments") or {}).get("text", ""))}]}
    return None


def main():
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "id" not in msg:
            continue
        result = answer(msg)
        reply = {"jsonrpc": "2.0", "id": msg["id"]}
        if result is None:
            reply["error"] = {"code": -32601, "message": "method not found"}
        else:
            reply["result"] = result
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
`

// TestQuietWheel observes a wheel the test builds (a plain stdlib MCP
// server) through the local PEP 503 index: status ok, its one tool called
// with success, and with nothing done on the network, to decoys or to
// persistent paths its behaviour is complete.
func TestQuietWheel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a wheel in gVisor; skipped under -short")
	}
	x := pkgstest.NewPyPIIndex(t)
	w := pkgstest.Wheel{Name: "histor-quiet-server", Version: "1.0.0", RequiresPython: ">=3.9",
		Files:       map[string]string{"histor_quiet_server/__init__.py": "", "histor_quiet_server/server.py": quietServer},
		EntryPoints: "[console_scripts]\nhistor-quiet-server = histor_quiet_server.server:main\n"}
	x.AddWheel(w)
	o := newTestObserver(t, Config{PyPI: x.URL, PyPIIndex: x.IndexURL()})
	obs := observe(t, o, "pypi:"+w.Name+"=="+w.Version, Options{})
	if obs.Status != sandbox.StatusOK || !slices.Equal(toolNames(obs.Tools), []string{"echo"}) || obs.ToolSetDigest == "" {
		t.Fatalf("status %s (%s), tools %v, digest %q", obs.Status, obs.Detail, toolNames(obs.Tools), obs.ToolSetDigest)
	}
	if obs.Runtime.Root != "python" || obs.Package != "pypi:histor-quiet-server==1.0.0" {
		t.Errorf("root %q, package %q", obs.Runtime.Root, obs.Package)
	}
	b := obs.Behaviour
	for _, p := range []sandbox.Phase{b.Startup, b.Calls} {
		if !p.Complete || len(p.Network) > 0 || len(p.Decoys) > 0 || len(p.Writes) > 0 || len(p.Exec) > 0 {
			t.Errorf("phase %+v, want complete and empty", p)
		}
	}
	if !obs.Calls.Complete || !b.Complete {
		t.Errorf("calls %+v, behaviour complete %v", obs.Calls, b.Complete)
	}
}

// TestHostileInstallScript observes histor-hostile-install, whose
// postinstall never ends, with a short install bound: the scripts stage is
// stopped at the bound and says so, what the script did before is
// recorded (its read of the decoy ~/.npmrc, its lookup and its POST with
// the decoy's canary, its write to ~/.bashrc), no host listener receives
// anything, and the observation goes on to the run stage and ends with a
// status.
func TestHostileInstallScript(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the hostile install script in gVisor; skipped under -short")
	}
	const bound = 8
	o := newTestObserver(t, Config{Limits: sandbox.Limits{InstallSeconds: bound}})
	host := listenOnHost(t, 80, 4444)
	tgz := filepath.Join(t.TempDir(), "histor-hostile-install.tgz")
	if err := os.WriteFile(tgz, pkgstest.HostileInstallNPM().Tarball(), 0o644); err != nil {
		t.Fatal(err)
	}
	var stages []string
	obs := observe(t, o, tgz, Options{Progress: func(s sandbox.Stage) {
		stages = append(stages, s.Name+"="+s.Status)
		if s.Name == "scripts" && s.Seconds > bound+30 {
			t.Errorf("scripts stage took %.1f s with a %d s bound", s.Seconds, bound)
		}
	}})
	if obs.Status != sandbox.StatusOK || !slices.Equal(toolNames(obs.Tools), []string{"hello"}) {
		t.Errorf("status %s (%s), tools %v", obs.Status, obs.Detail, toolNames(obs.Tools))
	}
	if !slices.Contains(stages, "scripts=timeout") || !slices.Contains(stages, "talk=ok") {
		t.Errorf("stages %v", stages)
	}
	s := obs.Install.Scripts
	if s == nil {
		t.Fatalf("no install-scripts record: %+v", obs.Install)
	}
	if !s.TimedOut || s.Complete {
		t.Errorf("scripts timedOut %v, complete %v", s.TimedOut, s.Complete)
	}
	if !slices.Contains(s.Decoys, sandbox.DecoyRead{Path: "/home/histor/.npmrc"}) {
		t.Errorf("scripts decoys %+v", s.Decoys)
	}
	if !slices.Contains(s.Writes, "/home/histor/.bashrc") {
		t.Errorf("scripts writes %q", s.Writes)
	}
	if !slices.ContainsFunc(s.Lookups, func(n string) bool { return strings.HasSuffix(n, pkgstest.HostileInstallDNSSuffix) }) {
		t.Errorf("scripts lookups %q", s.Lookups)
	}
	if !slices.ContainsFunc(s.Network, func(a sandbox.NetworkAttempt) bool {
		return a.Protocol == "http" && a.Method == "POST" && a.Path == "/install" && a.Canary
	}) {
		t.Errorf("scripts network %+v", s.Network)
	}
	host.assertNothing(t)
}
