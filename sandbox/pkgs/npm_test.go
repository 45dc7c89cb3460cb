package pkgs_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/sandbox/pkgs"
	"github.com/histor-observer/histor/sandbox/pkgs/pkgstest"
)

func needNPM(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed: the install stage runs the host's npm")
	}
}

func newPackages(t *testing.T, cfg pkgs.Config) *pkgs.Packages {
	t.Helper()
	cfg.Client = &http.Client{Timeout: 30 * time.Second}
	p, err := pkgs.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func resolve(t *testing.T, p *pkgs.Packages, spec string) (*pkgs.Resolved, error) {
	t.Helper()
	s, err := pkgs.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	return p.Resolve(context.Background(), s)
}

// noise is n hex characters that gzip cannot shrink below n/2 bytes.
func noise(n int) string {
	var b strings.Builder
	sum := sha256.Sum256(nil)
	for b.Len() < n {
		sum = sha256.Sum256(sum[:])
		b.WriteString(hex.EncodeToString(sum[:]))
	}
	return b.String()
}

const serverJS = "#!/usr/bin/env node\nconsole.log('hello');\n"

// TestNPMInstallFixture installs a package and its dependency from the
// fixture registry. The dependency has a postinstall that would write a
// file: the scan must name it and --ignore-scripts must not run it.
func TestNPMInstallFixture(t *testing.T) {
	needNPM(t)
	reg := pkgstest.NewNPMRegistry(t)
	marker := filepath.Join(t.TempDir(), "postinstall-ran")
	reg.Add(pkgstest.NPMPackage{Name: "helper-lib", Version: "2.0.0",
		Manifest: map[string]any{"scripts": map[string]any{"postinstall": "node -e \"require('fs').writeFileSync('" + marker + "', 'ran')\""}},
		Files:    map[string]string{"index.js": "module.exports = 1;\n"}})
	reg.Add(pkgstest.NPMPackage{Name: "@example/demo-mcp", Version: "1.2.0",
		Manifest: map[string]any{
			"bin":          map[string]any{"demo-helper": "bin/helper.js", "demo-mcp": "dist/index.js"},
			"dependencies": map[string]any{"helper-lib": "2.0.0"},
		},
		Files: map[string]string{"dist/index.js": serverJS, "bin/helper.js": serverJS}})
	p := newPackages(t, pkgs.Config{NPMRegistry: reg.URL})

	r, err := resolve(t, p, "npm:@example/demo-mcp")
	if err != nil {
		t.Fatal(err)
	}
	if r.Artifact != "npm:@example/demo-mcp@1.2.0" || !strings.HasPrefix(r.Integrity, "sha512-") {
		t.Errorf("resolved %q %q", r.Artifact, r.Integrity)
	}
	if !strings.HasPrefix(reg.UserAgent, "histor") {
		t.Errorf("User-Agent %q does not name histor", reg.UserAgent)
	}
	if !slices.Contains(reg.Requests(), "/@example/demo-mcp") {
		t.Errorf("requests %v", reg.Requests())
	}
	in, err := p.Install(context.Background(), r, t.TempDir())
	if err != nil {
		t.Fatalf("install: %v (%+v)", err, in.Record)
	}
	if want := []string{"node", "/work/pkg/node_modules/@example/demo-mcp/dist/index.js"}; !slices.Equal(in.Command, want) {
		t.Errorf("command %v, want %v", in.Command, want)
	}
	if !slices.Equal(in.Record.ScriptPackages, []string{"helper-lib"}) || in.Record.Status != "ok" {
		t.Errorf("record %+v, want helper-lib's scripts", in.Record)
	}
	if _, err := os.Stat(filepath.Join(in.Dir, "node_modules", "helper-lib", "index.js")); err != nil {
		t.Errorf("the dependency was not installed: %v", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the postinstall ran during install: %v", err)
	}
}

func TestNPMRefusals(t *testing.T) {
	needNPM(t)
	reg := pkgstest.NewNPMRegistry(t)
	reg.Add(pkgstest.NPMPackage{Name: "tampered", Version: "1.0.0", Files: map[string]string{"index.js": serverJS}})
	reg.Tamper("tampered", "1.0.0", pkgstest.Tarball(map[string]string{"package.json": `{"name":"tampered","version":"1.0.0"}`, "index.js": "evil"}))
	reg.Add(pkgstest.NPMPackage{Name: "big", Version: "1.0.0", Files: map[string]string{"blob.txt": noise(256 << 10)}})
	reg.Add(pkgstest.NPMPackage{Name: "escape", Version: "1.0.0", Manifest: map[string]any{"bin": "../../../../usr/bin/env"}, Files: map[string]string{"index.js": serverJS}})
	reg.Add(pkgstest.NPMPackage{Name: "no-bin", Version: "1.0.0", Files: map[string]string{"index.js": serverJS}})
	// A registry whose tarball host fails: the registry's failure, not the package's.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	t.Cleanup(down.Close)
	reg.SetPackument("down", []byte(`{"name":"down","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"down","version":"1.0.0","bin":"index.js",`+
		`"dist":{"tarball":"`+down.URL+`/down-1.0.0.tgz","shasum":"0000000000000000000000000000000000000000"}}}}`))
	p := newPackages(t, pkgs.Config{NPMRegistry: reg.URL, MaxArtifact: 64 << 10})

	tests := []struct {
		spec, status, detail string
	}{
		{"npm:down", "inspection-failed", "registry answered 503"},
		{"npm:absent", "not-found", "not in the registry"},
		{"npm:tampered@9.9.9", "not-found", "no version"},
		{"npm:tampered", "install-failed", "does not match the sha512 digest"},
		{"npm:big", "install-failed", "larger than 65536 bytes"},
		{"npm:escape", "no-entry-point", "outside its package"},
		{"npm:no-bin", "no-entry-point", "no command to start"},
	}
	for _, tt := range tests {
		r, err := resolve(t, p, tt.spec)
		var in *pkgs.Installed
		if err == nil {
			in, err = p.Install(context.Background(), r, t.TempDir())
		}
		if got := string(pkgs.StatusOf(err)); got != tt.status || !strings.Contains(pkgs.DetailOf(err), tt.detail) {
			t.Errorf("%s: %s %q, want %s %q", tt.spec, got, pkgs.DetailOf(err), tt.status, tt.detail)
		}
		if in != nil && tt.status == "install-failed" && in.Record.Status != "failed" {
			t.Errorf("%s: record %+v", tt.spec, in.Record)
		}
	}
}

func TestNPMInstallFailureTail(t *testing.T) {
	needNPM(t)
	reg := pkgstest.NewNPMRegistry(t)
	reg.Add(pkgstest.NPMPackage{Name: "broken-deps", Version: "1.0.0",
		Manifest: map[string]any{"bin": "index.js", "dependencies": map[string]any{"does-not-exist-anywhere": "1.0.0"}},
		Files:    map[string]string{"index.js": serverJS}})
	p := newPackages(t, pkgs.Config{NPMRegistry: reg.URL})
	r, err := resolve(t, p, "npm:broken-deps")
	if err != nil {
		t.Fatal(err)
	}
	in, err := p.Install(context.Background(), r, t.TempDir())
	d := in.Record.Detail
	if pkgs.StatusOf(err) != "install-failed" || d == "" || len([]rune(d)) > 400 || strings.ContainsAny(d, "\x1b\r") {
		t.Fatalf("install: %v, detail %q", err, d)
	}
	if !strings.Contains(d, "404") && !strings.Contains(d, "does-not-exist-anywhere") {
		t.Errorf("detail %q does not say what failed", d)
	}
}

// TestNPMRealRegistry resolves and installs the reference server from the
// npm registry: the only test that leaves the machine.
func TestNPMRealRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("reaches the npm registry: full suite only")
	}
	needNPM(t)
	p := newPackages(t, pkgs.Config{})
	r, err := resolve(t, p, "npm:@modelcontextprotocol/server-memory")
	if pkgs.StatusOf(err) == "inspection-failed" {
		t.Skipf("the npm registry is unreachable: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.Facts.Provenance == "absent" && r.Facts.Publisher == "unknown" {
		t.Errorf("provenance %q from a document without publisher: must be unknown", r.Facts.Provenance)
	}
	start := time.Now()
	in, err := p.Install(context.Background(), r, t.TempDir())
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	t.Logf("%s installed in %.1fs; command %v; scripts %v; facts %+v", r.Artifact, time.Since(start).Seconds(), in.Command, in.Record.ScriptPackages, r.Facts)
	want := []string{"node", "/work/pkg/node_modules/@modelcontextprotocol/server-memory/dist/index.js"}
	if !slices.Equal(in.Command, want) {
		t.Errorf("command %v, want %v", in.Command, want)
	}
	if _, err := os.Stat(filepath.Join(in.Dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Errorf("the SDK dependency is missing: %v", err)
	}
}

// TestInstallTimeout: an installer that outlives InstallTimeout is killed
// with its whole process group and the record says timeout.
func TestInstallTimeout(t *testing.T) {
	reg := pkgstest.NewNPMRegistry(t)
	reg.Add(pkgstest.NPMPackage{Name: "slow", Version: "1.0.0", Manifest: map[string]any{"bin": "index.js"}, Files: map[string]string{"index.js": serverJS}})
	p := newPackages(t, pkgs.Config{NPMRegistry: reg.URL, InstallTimeout: 300 * time.Millisecond,
		NPMCommand: []string{"sh", "-c", "sleep 60 & wait", "installer"}})
	r, err := resolve(t, p, "npm:slow")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	in, err := p.Install(context.Background(), r, t.TempDir())
	if pkgs.StatusOf(err) != "install-failed" || in.Record.Status != "timeout" || !strings.Contains(in.Record.Detail, "timed out") {
		t.Fatalf("install: %v, record %+v", err, in.Record)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("install took %s: the sleeping child was not killed", time.Since(start))
	}
}
