package pkgstest_test

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/histor-observer/histor/sandbox/pkgs"
	"github.com/histor-observer/histor/sandbox/pkgs/pkgstest"
	"github.com/histor-observer/histor/sandbox/testdata/hostile"
)

// TestHostileDeterministic builds every fixture twice: the bytes must not
// change, and the registry must serve what Tarball packs.
func TestHostileDeterministic(t *testing.T) {
	reg := pkgstest.NewNPMRegistry(t)
	for _, p := range []pkgstest.NPMPackage{pkgstest.HostileNPM(), pkgstest.HostileInstallNPM()} {
		a, b := p.Tarball(), p.Tarball()
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two builds differ", p.Name)
		}
		if served := reg.Add(p); !bytes.Equal(served, a) {
			t.Errorf("%s: the registry publishes other bytes than Tarball", p.Name)
		}
	}
	w := pkgstest.HostileWheel()
	if !bytes.Equal(w.Build(), pkgstest.HostileWheel().Build()) {
		t.Error("wheel: two builds differ")
	}
	if w.Filename() != "histor_hostile_fixture-1.0.0-py3-none-any.whl" {
		t.Errorf("wheel file name %q", w.Filename())
	}
}

// TestHostileManifests checks what the sandbox relies on: the fixture has
// a bin and nothing to install, the install fixture has a postinstall.
func TestHostileManifests(t *testing.T) {
	fix, inst := pkgstest.HostileNPM(), pkgstest.HostileInstallNPM()
	if fix.Name != "histor-hostile-fixture" || inst.Name != "histor-hostile-install" {
		t.Fatalf("names %q, %q", fix.Name, inst.Name)
	}
	for _, p := range []pkgstest.NPMPackage{fix, inst} {
		if p.Manifest["bin"] == nil || !strings.HasPrefix(p.Files["index.js"], "#!/usr/bin/env node\n") {
			t.Errorf("%s: no bin or no node shebang on index.js", p.Name)
		}
		for _, k := range []string{"dependencies", "optionalDependencies", "peerDependencies"} {
			if p.Manifest[k] != nil {
				t.Errorf("%s: has %s", p.Name, k)
			}
		}
	}
	if fix.Manifest["scripts"] != nil {
		t.Errorf("fixture has scripts %v", fix.Manifest["scripts"])
	}
	scripts, _ := inst.Manifest["scripts"].(map[string]any)
	if scripts["postinstall"] != "node postinstall.js" || inst.Files["postinstall.js"] == "" {
		t.Errorf("install fixture scripts %v", scripts)
	}
}

// TestHostileTargets keeps the constants the sandbox tests assert on in
// step with the sources, and every name and address in them harmless.
func TestHostileTargets(t *testing.T) {
	sources := map[string]string{}
	for _, p := range []pkgstest.NPMPackage{pkgstest.HostileNPM(), pkgstest.HostileInstallNPM()} {
		for name, body := range p.Files {
			sources["npm/"+p.Name+"/"+name] = body
		}
	}
	for name, body := range pkgstest.HostileWheel().Files {
		sources["pypi/"+name] = body
	}
	// Each server's TCP targets as its language writes them.
	targetForm := map[string]string{"npm/histor-hostile-fixture/index.js": "['%s', %s]", "pypi/histor_hostile_fixture/server.py": `("%s", %s)`}
	fixtures := slices.Sorted(maps.Keys(targetForm))
	for _, f := range fixtures {
		want := []string{pkgstest.HostileArmEnv, pkgstest.HostileDNSSuffix, pkgstest.HostileCollectHost, pkgstest.HostileMailHost, pkgstest.HostileRecipient}
		for _, target := range pkgstest.HostileTCPTargets() {
			host, port, _ := strings.Cut(target, ":")
			want = append(want, fmt.Sprintf(targetForm[f], host, port))
		}
		for _, s := range want {
			if !strings.Contains(sources[f], s) {
				t.Errorf("%s does not mention %q", f, s)
			}
		}
	}
	for _, tool := range pkgstest.HostileTools() {
		for _, f := range fixtures {
			if !strings.Contains(sources[f], `"`+tool.Name+`"`) && !strings.Contains(sources[f], `'`+tool.Name+`'`) {
				t.Errorf("%s has no tool %s", f, tool.Name)
			}
		}
	}
	install := sources["npm/histor-hostile-install/postinstall.js"]
	for _, s := range []string{pkgstest.HostileArmEnv, pkgstest.HostileInstallDNSSuffix, pkgstest.HostileCollectHost, ".bashrc", ".npmrc"} {
		if !strings.Contains(install, s) {
			t.Errorf("postinstall.js does not mention %q", s)
		}
	}
	for name, body := range sources {
		// The canary marker is assembled in the sources, never written whole.
		if strings.Contains(body, "histor-"+"canary-") {
			t.Errorf("%s holds a whole canary marker", name)
		}
		for _, host := range hostName.FindAllString(body, -1) {
			if !strings.HasSuffix(host, ".invalid") {
				t.Errorf("%s names %s, outside .invalid", name, host)
			}
		}
		for _, ip := range ipLiteral.FindAllString(body, -1) {
			if !harmlessIP(ip) {
				t.Errorf("%s names %s: not a documentation, loopback or loopback-alias address", name, ip)
			}
		}
	}
}

var (
	hostName  = regexp.MustCompile(`\b[a-z0-9-]+(\.[a-z0-9-]+)*\.(com|net|org|io|dev|app|co|invalid)\b`)
	ipLiteral = regexp.MustCompile(`\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b`)
)

// harmlessIP: TEST-NET-2 (RFC 5737), loopback, and 10.0.2.2, the host's
// loopback as user-mode networking (slirp) presents it.
func harmlessIP(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && (netip.MustParsePrefix("198.51.100.0/24").Contains(a) || a.IsLoopback() || s == "10.0.2.2")
}

// fakeHome is a HOME and working directory with secret-shaped files that
// carry no histor canary, so the tools that act refuse here; it returns
// how many of them read-secrets reads and their bytes.
func fakeHome(t *testing.T) (home, work string, files int, size int) {
	t.Helper()
	home, work = t.TempDir(), t.TempDir()
	plant := map[string]string{
		filepath.Join(home, ".ssh", "id_rsa"):      "fake key one\n",
		filepath.Join(home, ".ssh", "id_ed25519"):  "fake key two, longer\n",
		filepath.Join(home, ".ssh", "known_hosts"): "example.invalid ssh-ed25519 AAAA\n",
		filepath.Join(home, ".npmrc"):              "//registry.invalid/:_authToken=fake\n",
		filepath.Join(work, ".env"):                "FAKE_SECRET=fake-env-value\n",
		filepath.Join(home, ".aws", "credentials"): "[default]\nnot read by read-secrets\n",
	}
	for name, body := range plant {
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(name, ".aws") {
			files++
			size += len(body)
		}
	}
	return home, work, files, size
}

// mcpClient speaks newline-delimited JSON-RPC to a server's stdio.
type mcpClient struct {
	t      *testing.T
	in     io.WriteCloser
	out    *bufio.Scanner
	nextID int
}

type rpcAnswer struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int `json:"code"`
	} `json:"error"`
}

// startServer runs argv in work with exactly env, and stops it with the test.
func startServer(t *testing.T, argv, env []string, work string) *mcpClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stderr = work, env, &testWriter{t}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", argv, err)
	}
	t.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("server ended with %v after its stdin closed", err)
		}
		cancel()
	})
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	return &mcpClient{t: t, in: in, out: sc}
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(b []byte) (int, error) {
	w.t.Logf("server stderr: %s", b)
	return len(b), nil
}

func (c *mcpClient) notify(method string) {
	fmt.Fprintf(c.in, `{"jsonrpc":"2.0","method":%q}`+"\n", method)
}

// call sends one request and reads lines until its answer.
func (c *mcpClient) call(method string, params any) rpcAnswer {
	c.t.Helper()
	c.nextID++
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method, "params": params})
	if _, err := c.in.Write(append(req, '\n')); err != nil {
		c.t.Fatalf("sending %s: %v", method, err)
	}
	for c.out.Scan() {
		var a rpcAnswer
		if json.Unmarshal(c.out.Bytes(), &a) == nil && a.ID == c.nextID {
			return a
		}
	}
	c.t.Fatalf("no answer to %s: %v", method, c.out.Err())
	return rpcAnswer{}
}

func (c *mcpClient) result(method string, params, into any) {
	c.t.Helper()
	a := c.call(method, params)
	if a.Error != nil {
		c.t.Fatalf("%s: error %d", method, a.Error.Code)
	}
	if err := json.Unmarshal(a.Result, into); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

type toolAnswer struct {
	Content []struct {
		Type, Text string
	} `json:"content"`
	IsError bool `json:"isError"`
}

func (c *mcpClient) tool(name string) toolAnswer {
	c.t.Helper()
	var a toolAnswer
	c.result("tools/call", map[string]any{"name": name, "arguments": map[string]any{}}, &a)
	if len(a.Content) != 1 || a.Content[0].Type != "text" {
		c.t.Fatalf("%s: content %+v", name, a.Content)
	}
	return a
}

// checkServer runs the MCP exchange every fixture server must pass and
// calls only the tools that read: never the ones that act.
func checkServer(t *testing.T, c *mcpClient, name, version string, wantTools []string) {
	var init struct {
		ProtocolVersion string
		ServerInfo      struct{ Name, Version string }
		Capabilities    struct{ Tools *struct{} }
	}
	c.result("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "pkgstest", "version": "0"}}, &init)
	if init.ProtocolVersion != "2025-06-18" || init.ServerInfo.Name != name || init.ServerInfo.Version != version || init.Capabilities.Tools == nil {
		t.Errorf("initialize answered %+v", init)
	}
	c.notify("notifications/initialized")
	var list struct {
		Tools []struct {
			Name, Description string
			InputSchema       map[string]any
		}
		NextCursor *string
	}
	c.result("tools/list", map[string]any{}, &list)
	var got []string
	for _, tool := range list.Tools {
		got = append(got, tool.Name)
		if tool.Description == "" || tool.InputSchema["type"] != "object" {
			t.Errorf("tool %s: description %q, schema %v", tool.Name, tool.Description, tool.InputSchema)
		}
	}
	if !slices.Equal(got, wantTools) || list.NextCursor != nil {
		t.Errorf("tools/list gave %v (next %v), want %v", got, list.NextCursor, wantTools)
	}
	if a := c.call("no/such/method", nil); a.Error == nil || a.Error.Code != -32601 {
		t.Errorf("unknown method answered %+v", a)
	}
}

func hostileToolNames() []string {
	var names []string
	for _, tool := range pkgstest.HostileTools() {
		names = append(names, tool.Name)
	}
	return names
}

// checkReadingTools calls get-env and read-secrets, the two that only read.
func checkReadingTools(t *testing.T, c *mcpClient, files, size int) {
	env := c.tool("get-env")
	if env.IsError || !strings.Contains(env.Content[0].Text, "fake-placeholder-value") {
		t.Errorf("get-env answered %+v", env)
	}
	secrets := c.tool("read-secrets")
	want := fmt.Sprintf("read %d files, %d bytes", files, size)
	if secrets.IsError || secrets.Content[0].Text != want {
		t.Errorf("read-secrets answered %+v, want %q", secrets, want)
	}
	if strings.Contains(secrets.Content[0].Text, "fake") {
		t.Errorf("read-secrets returned what it read: %q", secrets.Content[0].Text)
	}
}

func hostileEnv(home string, extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "FAKE_PLACEHOLDER=fake-placeholder-value"}, extra...)
}

func need(t *testing.T, program string) {
	t.Helper()
	if _, err := exec.LookPath(program); err != nil {
		t.Skipf("%s is not installed: the fixture server runs on it", program)
	}
}

// TestHostileNPMServer starts the npm fixture from its tarball with node.
func TestHostileNPMServer(t *testing.T) {
	need(t, "node")
	p := pkgstest.HostileNPM()
	dir := untar(t, p.Tarball())
	home, work, files, size := fakeHome(t)
	c := startServer(t, []string{"node", filepath.Join(dir, "package", "index.js")}, hostileEnv(home), work)
	checkServer(t, c, p.Name, p.Version, hostileToolNames())
	checkReadingTools(t, c, files, size)
}

// TestHostileWheelServer starts the wheel's server with python3, by the
// command histor's install stage derives from its console script.
func TestHostileWheelServer(t *testing.T) {
	need(t, "python3")
	w := pkgstest.HostileWheel()
	dir := unzip(t, w.Build())
	argv, err := pkgs.PyPIEntry(dir, pkgs.NormalisePyPI(w.Name))
	if err != nil {
		t.Fatal(err)
	}
	home, work, files, size := fakeHome(t)
	env := hostileEnv(home, "PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1")
	c := startServer(t, argv, env, work)
	checkServer(t, c, w.Name, w.Version, hostileToolNames())
	checkReadingTools(t, c, files, size)
}

// TestHostileInstallServer starts histor-hostile-install's bin: a plain
// server with one tool.
func TestHostileInstallServer(t *testing.T) {
	need(t, "node")
	p := pkgstest.HostileInstallNPM()
	dir := untar(t, p.Tarball())
	home, work, _, _ := fakeHome(t)
	c := startServer(t, []string{"node", filepath.Join(dir, "package", "index.js")}, hostileEnv(home), work)
	checkServer(t, c, p.Name, p.Version, []string{"hello"})
	if a := c.tool("hello"); a.IsError || a.Content[0].Text != "hello" {
		t.Errorf("hello answered %+v", a)
	}
}

// TestHostileInstallScriptUnarmed runs the postinstall where there are no
// decoys: it must read, write nothing, and hang until killed (the bound
// is the sandbox's to enforce; here the test kills its process group).
func TestHostileInstallScriptUnarmed(t *testing.T) {
	need(t, "node")
	dir := untar(t, pkgstest.HostileInstallNPM().Tarball())
	home, _, _, _ := fakeHome(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "postinstall.js")
	cmd.Dir, cmd.Env = filepath.Join(dir, "package"), hostileEnv(home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, "waits forever") {
		t.Fatalf("postinstall printed %q, %v", line, err)
	}
	if _, err := os.Stat(filepath.Join(home, ".bashrc")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unarmed postinstall touched ~/.bashrc: %v", err)
	}
	cancel() // kills the group: node and its sleep
	if err := cmd.Wait(); err == nil {
		t.Error("postinstall ended by itself")
	}
}

func untar(t *testing.T, tgz []byte) string {
	t.Helper()
	dir := t.TempDir()
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, h.Name, tr, os.FileMode(h.Mode))
	}
}

func unzip(t *testing.T, whl []byte) string {
	t.Helper()
	dir := t.TempDir()
	zr, err := zip.NewReader(bytes.NewReader(whl), int64(len(whl)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, f.Name, r, 0o644)
		r.Close()
	}
	return dir
}

func writeFile(t *testing.T, dir, name string, r io.Reader, mode os.FileMode) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(name))
	if !strings.HasPrefix(path, dir+string(filepath.Separator)) {
		t.Fatalf("archive member %q escapes", name)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, mode); err != nil {
		t.Fatal(err)
	}
}

// TestHostileSourcesEmbedded checks the embed patterns miss no source
// file: one added beside the others must reach the packages.
func TestHostileSourcesEmbedded(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "hostile")
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Dir(path) == root {
			return err // hostile.go itself is no package file
		}
		if strings.Contains(path, "__pycache__") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		n++
		if _, err := fs.Stat(hostile.Sources, filepath.ToSlash(rel)); err != nil {
			t.Errorf("%s is not embedded: %v", rel, err)
		}
		return nil
	})
	if err != nil || n < 7 {
		t.Fatalf("walked %d source files: %v", n, err)
	}
}
