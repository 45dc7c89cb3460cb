package mcpclient

import (
	"context"
	"net"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/histor-observer/histor/log/mtl"
)

const everythingPkg = "@modelcontextprotocol/server-everything"

// everythingVersion is the release the tests pin (scripts/test installs the
// same one), so a new upstream release cannot change what they observe.
const everythingVersion = "2026.8.31"

// TestServerEverything observes the reference TypeScript server from npm in
// its streamable-HTTP and legacy SSE modes: same tools, same digest, and
// only read-only methods sent (checked through a recording proxy).
func TestServerEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Node.js servers from npm; skipped under -short")
	}
	entry := everythingEntry(t)
	modes := []struct {
		mode, path string
		tr         Transport
	}{
		{"streamableHttp", "/mcp", StreamableHTTP},
		{"sse", "/sse", SSE},
	}
	digests := map[string]string{}
	for _, m := range modes {
		base := startNode(t, entry, m.mode)
		var log methodLog
		proxy := httputil.NewSingleHostReverseProxy(base)
		proxy.FlushInterval = -1
		srv := serve(t, log.wrap(proxy))
		obs := observe(t, testClient(Config{Deadline: 30 * time.Second}), srv.URL+m.path, m.tr)
		if obs.Status != StatusOK {
			t.Fatalf("%s: status %s (%s)", m.mode, obs.Status, obs.Detail)
		}
		d, err := mtl.Digest(obs.Tools)
		if err != nil {
			t.Fatalf("%s: digest: %v", m.mode, err)
		}
		digests[m.mode] = d
		assertReadOnly(t, &log)
		t.Logf("%s: era %s, version %s, %d tools, %s", m.mode, obs.Era, obs.ProtocolVersion, len(obs.Tools), d)
		if len(obs.Tools) < 10 {
			t.Errorf("%s: only %d tools", m.mode, len(obs.Tools))
		}
	}
	if digests["streamableHttp"] != digests["sse"] {
		t.Errorf("digests differ between modes: %v", digests)
	}
}

// everythingEntry returns the server's entry script, installing the package
// once into HISTOR_NPM_DIR (scripts/test sets it) or a test-private prefix.
func everythingEntry(t *testing.T) string {
	dir := os.Getenv("HISTOR_NPM_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	entry := filepath.Join(dir, "node_modules", everythingPkg, "dist", "index.js")
	if _, err := os.Stat(entry); err == nil {
		return entry
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed; cannot fetch " + everythingPkg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "npm", "install", "--silent", "--no-audit", "--no-fund",
		"--prefix", dir, everythingPkg+"@"+everythingVersion).CombinedOutput()
	if err != nil {
		t.Skipf("npm registry unreachable, cannot install %s: %v: %.300s", everythingPkg, err, out)
	}
	return entry
}

// startNode runs the server in mode on a free loopback port, in its own
// process group that is killed when the test ends.
func startNode(t *testing.T, entry, mode string) *url.URL {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command("node", entry, mode)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s %s: %v", everythingPkg, mode, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s did not listen on %s within 30s", everythingPkg, mode, addr)
		}
	}
	return &url.URL{Scheme: "http", Host: addr}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
