package gvisor

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func needNode(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil || !strings.HasPrefix(p, "/usr/") {
		t.Skip("needs node under /usr (the bind-mount root only has the host's /usr)")
	}
	return p
}

func TestMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: fills 512 MiB")
	}
	rt := newTestRuntime(t)
	node := needNode(t)
	r := testRun(t, node, "-e", "const a=[];for(let i=0;i<900;i++){a.push(Buffer.alloc(1<<20,1))};console.log('allocated')")
	start := time.Now()
	res := runIn(t, rt, r, 90*time.Second)
	if res.exit.End != EndMemory {
		t.Errorf("exit = %+v, want memory limit (stdout %q)", res.exit, res.stdout)
	}
	if strings.Contains(res.stdout, "allocated") {
		t.Errorf("900 MB fit in a 512 MiB sandbox")
	}
	t.Logf("ended %q after %v", res.exit, time.Since(start))
	assertGone(t, rt, r.ID)
}

func TestPidsLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: forks until the limit")
	}
	rt := newTestRuntime(t)
	// "started" proves the shell ran inside the sandbox: a sandbox that never started prints
	// nothing and must not pass as a fork that failed.
	r := testRun(t, "/bin/sh", "-c", "echo started; for i in $(seq 200); do sleep 100 & done 2>/dev/null; echo count $(ls /proc | grep -c '^[0-9]')")
	r.Limits.Pids = 32
	res := runIn(t, rt, r, 30*time.Second)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if lines[0] != "started" {
		t.Fatalf("stdout %q, stderr %q, exit %+v: the shell never ran in the sandbox", res.stdout, res.stderr, res.exit)
	}
	// Either the shell died when fork failed (dash exits 2), or it counted what ran.
	n := -1
	if len(lines) == 2 {
		c, ok := strings.CutPrefix(lines[1], "count ")
		v, err := strconv.Atoi(c)
		if !ok || err != nil {
			t.Fatalf("stdout %q: not a count", res.stdout)
		}
		n = v
	} else if len(lines) != 1 || res.exit.Code == 0 {
		t.Fatalf("stdout %q, exit %+v: neither a count nor a failed fork", res.stdout, res.exit)
	}
	if n > 32 {
		t.Errorf("%d processes ran under a limit of 32", n)
	}
	t.Logf("processes: %d, exit %q", n, res.exit)
	assertGone(t, rt, r.ID)
}

// testNetns makes a network namespace with one end of a veth pair (the other
// end on the host) and returns its path.
func testNetns(t *testing.T) (string, string) {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8)")
	}
	name := fmt.Sprintf("histor-t%d", os.Getpid()%100000)
	host, inner := "vh"+name[8:], "vs"+name[8:]
	ip := func(args ...string) {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	ip("netns", "add", name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run(); exec.Command("ip", "link", "del", host).Run() })
	ip("link", "add", host, "type", "veth", "peer", "name", inner)
	ip("link", "set", inner, "netns", name)
	ip("addr", "add", "10.231.77.1/30", "dev", host)
	ip("link", "set", host, "up")
	ip("-n", name, "addr", "add", "10.231.77.2/30", "dev", inner)
	ip("-n", name, "link", "set", inner, "up")
	ip("-n", name, "route", "add", "default", "via", "10.231.77.1")
	return "/var/run/netns/" + name, inner
}

func TestNetnsOnlyItsInterface(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: netstack start")
	}
	rt := newTestRuntime(t)
	node := needNode(t)
	netns, inner := testNetns(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	script := fmt.Sprintf(`console.log(Object.keys(require("os").networkInterfaces()).sort().join(","));
let left=2; const done=()=>{if(--left==0)process.exit(0)};
for (const h of ["127.0.0.1","10.231.77.1"]) { const s=require("net").connect(%d,h);
 s.on("connect",()=>{console.log(h,"connected");s.destroy();done()}); s.on("error",e=>{console.log(h,e.code);done()}); }`, port)
	r := testRun(t, node, "-e", script)
	r.NetNS = netns
	res := runIn(t, rt, r, 60*time.Second)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	// The namespace's own lo is down, so netstack has no loopback either.
	if len(lines) != 3 || (lines[0] != inner && lines[0] != "lo,"+inner) {
		t.Fatalf("stdout %q (stderr %q), want interfaces lo,%s and two refusals", res.stdout, res.stderr, inner)
	}
	for _, l := range lines[1:] {
		if strings.Contains(l, "connected") {
			t.Errorf("reached the host: %q", l)
		}
	}
	assertGone(t, rt, r.ID)
}

func TestTracedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: traced node run")
	}
	rt := newTestRuntime(t)
	node := needNode(t)
	home := t.TempDir()
	os.Chmod(home, 0o755)
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o755)
	os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("histor-canary\n"), 0o644)
	script := `require("fs").readFileSync("/home/u/.ssh/id_rsa");
require("child_process").spawnSync("/usr/bin/true", ["--flag"]);
const s=require("net").connect(8080,"10.1.2.3"); s.on("error",()=>process.exit(0));`
	r := testRun(t, node, "-e", script)
	r.Mounts = append(r.Mounts, Mount{Source: home, Destination: "/home"})
	os.Mkdir(filepath.Join(home, "u"), 0o755)
	os.Rename(filepath.Join(home, ".ssh"), filepath.Join(home, "u", ".ssh"))
	r.Env = []string{"HOME=/home/u"}
	r.Trace = &Tracing{Dir: filepath.Join(t.TempDir(), "trace")}
	from := time.Now().Add(-time.Second)
	res := runIn(t, rt, r, 60*time.Second)
	if res.exit.End != EndExited {
		t.Fatalf("exit %+v, stderr %q", res.exit, res.stderr)
	}
	w := []Window{{Name: "startup", From: from, To: time.Now().Add(time.Second)}}
	rep, err := ReadTrace(r.Trace.Dir, w, HISTORLists("/home/u", "/work"), time.Local)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Phases[0]
	if !slices.Contains(p.Exec, "true --flag") {
		t.Errorf("exec %q", p.Exec)
	}
	if !slices.Contains(p.Decoys, "/home/u/.ssh/id_rsa") {
		t.Errorf("decoys %q", p.Decoys)
	}
	if !slices.ContainsFunc(p.Network, func(c Connection) bool { return c.Address == "10.1.2.3" && c.Port == 8080 && c.Protocol == "tcp" }) {
		t.Errorf("network %+v", p.Network)
	}
	t.Logf("records %d, reasons %q", rep.Records, rep.Reasons)
}
