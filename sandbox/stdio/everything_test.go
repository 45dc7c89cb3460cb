package stdio

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/sandbox"
)

// everythingEntry returns the entry script of the reference server that
// scripts/test installs into HISTOR_NPM_DIR (crawl/mcpclient pins the release).
func everythingEntry(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("HISTOR_NPM_DIR")
	if dir == "" {
		tb.Skip("HISTOR_NPM_DIR is unset: scripts/test installs @modelcontextprotocol/server-everything there")
	}
	if _, err := exec.LookPath("node"); err != nil {
		tb.Skip("node is not installed")
	}
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		tb.Skipf("server-everything is not installed in HISTOR_NPM_DIR: %v", err)
	}
	return entry
}

// placeholder stands in for a decoy the orchestrator puts in the server's
// environment; get-env must hand it back.
const placeholder = "histor-canary-r1-env"

func startEverything(tb testing.TB, entry string) *process {
	cmd := exec.Command("node", entry, "stdio")
	cmd.Env = append(os.Environ(), "HISTOR_CANARY_TOKEN="+placeholder)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return startProcess(tb, cmd)
}

// TestServerEverything talks to the reference server over stdio, outside any
// sandbox: the tools and their MTL/1 digest are the crawler's for the same
// package over streamable HTTP, the calls are made, get-env's answer is kept.
func TestServerEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Node.js servers; skipped under -short")
	}
	entry := everythingEntry(t)
	p := startEverything(t, entry)
	r := Talk(context.Background(), Config{}, p.run(testCanary))
	if r.Status != sandbox.StatusOK {
		t.Fatalf("status %s (%s)", r.Status, r.Detail)
	}
	digest, err := mtl.Digest(r.Tools)
	if err != nil {
		t.Fatalf("digest: %v", err)
	}
	t.Logf("stdio: %d tools in %d pages, version %s, server %v, %s; listed after %s, done after %s; calls %+v",
		len(r.Tools), r.Pages, r.ProtocolVersion, r.ServerInfo, digest, r.Listed.Sub(r.Started).Round(time.Millisecond),
		r.Ended.Sub(r.Started).Round(time.Millisecond), callSummary(r.Calls))

	obs := crawlEverything(t, entry)
	want, err := mtl.Digest(obs.Tools)
	if err != nil {
		t.Fatalf("crawler digest: %v", err)
	}
	if got, wantNames := names(r.Tools), names(obs.Tools); !slices.Equal(got, wantNames) {
		t.Errorf("stdio tools %v, crawler's %v", got, wantNames)
	}
	if digest != want {
		t.Errorf("stdio digest %s, crawler's (%s era) %s", digest, obs.Era, want)
	}
	checkEverythingCalls(t, r)
}

func checkEverythingCalls(t *testing.T, r *Result) {
	t.Helper()
	c := r.Calls
	if c.Total != len(r.Tools) || c.Attempted == 0 || c.Successful == 0 || len(c.Outcomes) != min(DefaultMaxCalls, len(r.Tools)) {
		t.Errorf("coverage %+v", c)
	}
	var env *Answer
	for i := range r.Answers {
		if r.Answers[i].Tool == "get-env" {
			env = &r.Answers[i]
		}
	}
	if env == nil || !strings.Contains(env.Text, placeholder) || !strings.Contains(env.JSON, placeholder) {
		t.Errorf("get-env's answer does not hold the placeholder: %+v", env)
	}
}

func callSummary(c sandbox.Coverage) string {
	var b strings.Builder
	for _, o := range c.Outcomes {
		b.WriteString(o.Tool + "=" + o.Status)
		if o.Reason != "" {
			b.WriteString("(" + o.Reason + ")")
		}
		b.WriteString(" ")
	}
	return b.String()
}

func names(tools []any) []string {
	var out []string
	for _, t := range tools {
		out = append(out, toolName(t))
	}
	slices.Sort(out)
	return out
}

// crawlEverything observes the same package started with its streamable
// HTTP transport, with the crawler's own client.
func crawlEverything(t *testing.T, entry string) *mcpclient.Observation {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", entry, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	startProcess(t, cmd)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything did not listen on %s within 30s", addr)
		}
	}
	obs := mcpclient.New(mcpclient.Config{Deadline: 30 * time.Second}).Observe(context.Background(), "http://"+addr+"/mcp", mcpclient.StreamableHTTP)
	if obs.Status != mcpclient.StatusOK {
		t.Fatalf("crawler: status %s (%s)", obs.Status, obs.Detail)
	}
	return obs
}

// BenchmarkEverythingSession is one whole session with the reference
// server: start, initialize, list, 15 canary calls.
func BenchmarkEverythingSession(b *testing.B) {
	entry := everythingEntry(b)
	for b.Loop() {
		p := startEverything(b, entry)
		r := Talk(context.Background(), Config{}, p.run(testCanary))
		if r.Status != sandbox.StatusOK {
			b.Fatalf("status %s (%s)", r.Status, r.Detail)
		}
		b.ReportMetric(r.Listed.Sub(r.Started).Seconds(), "s-to-listed")
		p.kill()
	}
}
