package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/registry/registrytest"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/node/desk/desktest"
	"github.com/histor-observer/histor/node/pkgruns"
	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/pkgs/pkgstest"
	"github.com/histor-observer/histor/sandbox/queue"
)

// tinyServerJS is a stdio MCP server that waits before it answers
// initialize, so a test can kill the worker while its sandbox runs. Its
// tools are what the Go SDK server of tinyHTTPServer lists, so the
// two digests, computed apart, must agree.
const tinyServerJS = `#!/usr/bin/env node
const rl = require('readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const tools = %s;
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === 'initialize') {
    setTimeout(() => send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: 'tiny-weather', version: '1.0.0' } } }), 3000);
  } else if (m.method === 'tools/list') {
    send({ jsonrpc: '2.0', id: m.id, result: { tools } });
  } else if (m.method === 'tools/call') {
    send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'sunny' }] } });
  } else {
    send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no such method' } });
  }
});
`

// syncBuffer is a log sink several goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// needSandboxHost skips unless this host can run the observer: root,
// runsc, ip, iptables, npm and built roots.
func needSandboxHost(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds histor and runs packages in gVisor: not in -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: runsc run, network namespaces and cgroups")
	}
	for _, bin := range []string{"runsc", "ip", "iptables", "npm", "go"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed (scripts/test installs it)", bin)
		}
	}
	dir := os.Getenv("HISTOR_ROOTFS_CACHE")
	if dir == "" {
		t.Skip("HISTOR_ROOTFS_CACHE is unset: scripts/test points it at the built Debian roots")
	}
	if _, err := os.Stat(filepath.Join(dir, "node.json")); err != nil {
		t.Skipf("no built node root in HISTOR_ROOTFS_CACHE (histor sandbox roots builds it): %v", err)
	}
	return dir
}

func buildHistor(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "histor")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/histor").CombinedOutput()
	if err != nil {
		t.Fatalf("building histor: %v\n%s", err, out)
	}
	return bin
}

// workerProc is one `histor sandbox worker` process.
type workerProc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
}

// workerKey makes a worker's directory and NKey seed in it.
func workerKey(t *testing.T) (dir, pub string) {
	t.Helper()
	dir = t.TempDir()
	pub, err := queue.CreateSeedFile(filepath.Join(dir, "worker.seed"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, pub
}

func startWorker(t *testing.T, bin, url, npm, roots, dir string) *workerProc {
	t.Helper()
	seed := filepath.Join(dir, "worker.seed")
	w := &workerProc{stderr: &bytes.Buffer{}}
	w.cmd = exec.Command(bin, "--log-level", "debug", "sandbox", "worker", "--queue", url, "--worker-seed", seed,
		"--npm-registry", npm, "--sandbox-dir", dir, "--rootfs", roots, "--skip-root-check",
		"--concurrency", "1", "--retry-delay", "1s")
	w.cmd.Stderr = w.stderr
	w.cmd.Env = append(os.Environ(), "HOME="+dir)
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.cmd.Process.Signal(syscall.SIGTERM)
		w.cmd.Wait()
		if t.Failed() {
			t.Logf("worker %d:\n%s", w.cmd.Process.Pid, w.stderr)
		}
	})
	return w
}

// hasChild reports whether process pid has a child named name (runsc, npm).
func hasChild(pid int, name string) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, c := range strings.Fields(string(b)) {
			comm, _ := os.ReadFile("/proc/" + c + "/comm")
			if strings.TrimSpace(string(comm)) == name {
				return true
			}
			if n, err := strconv.Atoi(c); err == nil && hasChild(n, name) {
				return true
			}
		}
	}
	return false
}

// TestSandboxQueueWithWorkerProcesses: a node with the embedded queue and
// two `histor sandbox worker` processes on loopback. The worker that took
// the package's job is SIGKILLed while its sandbox runs; the other does the
// job once, and the package gets its labels once, with the package version
// as artifact and the digest the crawler computes for the same tools over
// HTTP. A package whose registry document never reads ends poisoned after
// its deliveries. The census counts both; the server page shows the run.
func TestSandboxQueueWithWorkerProcesses(t *testing.T) {
	roots := needSandboxHost(t)
	httpSrv := tinyHTTPServer(t)
	js := fmt.Sprintf(tinyServerJS, toolsJSON(t, httpSrv))
	npm := pkgstest.NewNPMRegistry(t)
	npm.Add(pkgstest.NPMPackage{Name: "tiny-weather", Version: "1.0.0",
		Manifest: map[string]any{"bin": map[string]any{"tiny-weather": "index.js"}},
		Files:    map[string]string{"index.js": js}})
	npm.SetPackument("broken-weather", []byte("this is not a packument"))
	reg := registrytest.Server(t, []registrytest.Entry{
		{Name: "io.example/tiny", Packages: []registrytest.Package{{RegistryType: "npm", Identifier: "tiny-weather", Version: "1.0.0"}}},
		{Name: "io.example/broken", Packages: []registrytest.Package{{RegistryType: "npm", Identifier: "broken-weather", Version: "1.0.0"}}},
	})
	bin := buildHistor(t)
	d1, k1 := workerKey(t)
	d2, k2 := workerKey(t)

	var nodeLog syncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node:\n%s", nodeLog.String())
		}
	})
	cfg := Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&nodeLog, nil)), Crawl: crawl.Config{Registry: reg.URL, AllowPrivateTargets: true},
		Sandbox: SandboxConfig{Enabled: true, Listen: "127.0.0.1:0", Workers: []string{k1, k2},
			// The worker beats every AckWait/3: 12 s leaves room for a loaded
			// machine's stalls, so only the killed worker's job is redelivered.
			AckWait: 12 * time.Second, MaxDeliver: 2, NPMRegistry: npm.URL}}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := n.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	url := n.sbx.Load().QueueURL()
	w1 := startWorker(t, bin, url, npm.URL, roots, d1)
	w2 := startWorker(t, bin, url, npm.URL, roots, d2)
	if started, _ := n.crawls.Start(); !started {
		t.Fatal("no crawl started")
	}

	tiny := mtl.ServerID("io.example/tiny", "npm:tiny-weather")
	broken := mtl.ServerID("io.example/broken", "npm:broken-weather")
	const within = 2 * time.Minute
	deadline := time.Now().Add(within)
	killed := false
	for {
		if time.Now().After(deadline) {
			t.Fatalf("the runs did not finish in %s", within)
		}
		if !killed {
			for _, w := range []*workerProc{w1, w2} {
				if hasChild(w.cmd.Process.Pid, "runsc") {
					w.cmd.Process.Kill()
					killed = true
					t.Logf("killed worker %d while its sandbox ran", w.cmd.Process.Pid)
					break
				}
			}
		}
		a, _ := n.state.PackageRun(tiny)
		b, _ := n.state.PackageRun(broken)
		if a != nil && b != nil {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling real processes; nothing here is timed by it
	}
	if !killed {
		t.Error("no worker was seen running the sandbox, so none was killed")
	}
	checkTinyRun(t, n, tiny)
	checkOwnView(t, n, tiny)
	checkPoisoned(t, n, broken)
	checkDigestAsCrawled(t, n, tiny, httpSrv)
	checkCensus(t, n)
	checkServerPage(t, n, tiny)
}

func checkTinyRun(t *testing.T, n *Node, id string) {
	t.Helper()
	run, err := n.state.PackageRun(id)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != sandbox.StatusOK || run.Package != "npm:tiny-weather@1.0.0" || run.Behaviour == "" || run.Runtime.Name != "runsc" {
		t.Fatalf("run %+v", run)
	}
	labels, err := n.state.Labels(id)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, l := range labels {
		count[l.Method]++
	}
	if count[awr.MethodObservation] != 1 {
		t.Errorf("labels by method %v: want one observation label (the job done once)", count)
	}
	if b, err := n.log.Evidence("behaviour", run.Behaviour); err != nil || !bytes.Contains(b, []byte(`"npm:tiny-weather@1.0.0"`)) {
		t.Errorf("behaviour record %s: %v", run.Behaviour, err)
	}
}

// checkOwnView: the result's labels reach the node's own view of the
// federation (and so its gossip) at once, with no crawl after them.
func checkOwnView(t *testing.T, n *Node, id string) {
	t.Helper()
	s := n.fed.Peers()
	obs, err := s.Observers(id)
	if err != nil {
		t.Fatal(err)
	}
	run, _ := n.state.PackageRun(id)
	if len(obs) != 1 || !obs[0].Self || obs[0].Digest == "" || obs[0].Package != run.Package {
		for _, o := range obs {
			t.Logf("observer %s self %v package %q endpoint %q digest %q status %q", o.DID, o.Self, o.Package, o.Endpoint, o.Digest, o.Status)
		}
		t.Errorf("own view of %s: %d observers; want this node's observation of %s", id, len(obs), run.Package)
	}
}

func checkPoisoned(t *testing.T, n *Node, id string) {
	t.Helper()
	run, err := n.state.PackageRun(id)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != sandbox.StatusPoisoned {
		t.Fatalf("broken package: status %s (%s), want poisoned", run.Status, run.Detail)
	}
	if labels, _ := n.state.Labels(id); len(labels) != 0 {
		t.Errorf("a poisoned job got %d labels", len(labels))
	}
	// Not queued again within the duplicate window: a round queues nothing.
	if q, err := n.sbx.Load().ScheduleRound(context.Background()); err != nil || q != 0 {
		t.Errorf("a round after the runs queued %d (%v)", q, err)
	}
}

// tinyHTTPServer serves the fixture's tool over streamable HTTP with the
// Go SDK.
func tinyHTTPServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "tiny-weather", Version: "1.0.0"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "forecast", Description: "Forecast for a city."},
			func(context.Context, *mcp.CallToolRequest, struct {
				City string `json:"city"`
			}) (*mcp.CallToolResult, any, error) {
				panic("a tool was called")
			})
		return s
	}, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	return srv
}

// toolsJSON is what a plain client reads from srv's tools/list.
func toolsJSON(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	ctx := context.Background()
	sess, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	res, err := sess.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res.Tools)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkDigestAsCrawled crawls srv over HTTP and compares the tool-set
// digest with the package's.
func checkDigestAsCrawled(t *testing.T, n *Node, id string, srv *httptest.Server) {
	t.Helper()
	reg := registrytest.Server(t, []registrytest.Entry{{Name: "io.example/tiny-http",
		Remotes: []registrytest.Remote{{Type: "streamable-http", URL: srv.URL + "/mcp"}}}})
	c2 := Config{DataDir: t.TempDir(), Crawl: crawl.Config{Registry: reg.URL, AllowPrivateTargets: true}}
	n2, err := New(c2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n2.CrawlOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, err := state.Open(n2.StateDir(), c2.Logger)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	httpObs, err := st.Observation(mtl.ServerID("io.example/tiny-http", srv.URL+"/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	pkgObs, err := n.state.Observation(id)
	if err != nil {
		t.Fatal(err)
	}
	if pkgObs.ToolSetDigest == "" || pkgObs.ToolSetDigest != httpObs.ToolSetDigest {
		t.Errorf("package digest %q, crawled over HTTP %q", pkgObs.ToolSetDigest, httpObs.ToolSetDigest)
	}
}

func checkCensus(t *testing.T, n *Node) {
	t.Helper()
	rec := httptest.NewRecorder()
	n.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/census", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("census: %d %s", rec.Code, rec.Body)
	}
	doc, err := format.VerifyDocument(rec.Body.Bytes(), n.id.logKey.Public().(ed25519.PublicKey), sandbox.CensusType)
	if err != nil {
		t.Fatal(err)
	}
	if doc["packages"] != int64(2) || doc["completed"] != int64(1) {
		t.Errorf("census packages %v completed %v", doc["packages"], doc["completed"])
	}
}

func checkServerPage(t *testing.T, n *Node, id string) {
	t.Helper()
	rec := httptest.NewRecorder()
	n.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/servers/"+id, nil))
	var page struct {
		Server  map[string]any `json:"server"`
		Package pkgruns.Member `json:"package"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		t.Fatalf("server page %d: %v", rec.Code, err)
	}
	r := page.Package.LastRun
	if r == nil || r.Status != "ok" || r.Version != "1.0.0" || r.BehaviourURL == nil || len(page.Package.Versions) != 1 {
		t.Fatalf("package member %+v", page.Package)
	}
	if page.Server["toolSetDigest"] == nil {
		t.Errorf("server summary %v has no digest", page.Server)
	}
	// The desk's page of the server shows the same run, as a record.
	rec = httptest.NewRecorder()
	n.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/s/"+id, nil))
	// Compared as text, not markup: html/template writes the SRI's "+" in
	// an attribute as "&#43;".
	text := html.UnescapeString(rec.Body.String())
	if rec.Code != 200 || !strings.Contains(text, "Sandbox runs") || !strings.Contains(text, "npm:tiny-weather@1.0.0") ||
		!strings.Contains(text, `href="`+*r.BehaviourURL+`"`) {
		t.Errorf("the desk's server page (%d) does not show the last run", rec.Code)
	}
	for _, err := range desktest.Lint(rec.Body.Bytes()) {
		t.Errorf("desk server page: %v", err)
	}
}
