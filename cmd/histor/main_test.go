package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
)

// bin is the histor binary built once for every test here.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "histor-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "histor")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building histor: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is one run of the binary.
type result struct {
	code           int
	stdout, stderr string
}

func histor(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = cleanEnv()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running histor %v: %v", args, err)
	}
	return result{code, out.String(), errb.String()}
}

// cleanEnv keeps the developer's HISTOR_* settings out of the tests.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HISTOR_") {
			env = append(env, kv)
		}
	}
	return env
}

const (
	toolsVector = "../../log/mtl/testdata/mtl1/pass-01-tools.json"
	toolsDigest = "sha256-9+Gp1Oq15KPBAAGmFucoVwSQ/PUzwLt1CRxesSUvX5c="
)

func TestDigestVector(t *testing.T) {
	for _, r := range []result{histor(t, "", "digest", toolsVector), histor(t, mustRead(t, toolsVector), "digest", "-"), histor(t, mustRead(t, toolsVector), "digest")} {
		if r.code != 0 || r.stdout != toolsDigest+"\n" || r.stderr != "" {
			t.Errorf("digest gave exit %d, stdout %q, stderr %q; want exit 0 and %s alone", r.code, r.stdout, r.stderr, toolsDigest)
		}
	}
}

func TestDigestRefusals(t *testing.T) {
	cases := map[string]string{
		"MTL-SUBJ-002": `{"tools":[]}`,
		"MTL-SUBJ-001": `{"tools":[{"description":"no name"}]}`,
		"MTL-SUBJ-003": `{"tools":[{"name":"a"},{"name":"a"}]}`,
		"MTL-NUM-001":  `{"tools":[{"name":"a","inputSchema":{"maximum":2340.0}}]}`,
	}
	for code, in := range cases {
		r := histor(t, in, "digest", "-")
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, code) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and the code on stderr", in, r.code, r.stdout, r.stderr)
		}
	}
	if r := histor(t, "", "digest", filepath.Join(t.TempDir(), "missing.json")); r.code != 1 || r.stderr == "" {
		t.Errorf("missing file: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := histor(t, "", "digest", "a", "b"); r.code != 2 {
		t.Errorf("two files: exit %d, want 2", r.code)
	}
}

func TestKeygen(t *testing.T) {
	seedPath := filepath.Join(t.TempDir(), "seed")
	r := histor(t, "", "keygen", "--out", seedPath, "--origin", "e2e.example/log")
	if r.code != 0 {
		t.Fatalf("keygen: exit %d: %s", r.code, r.stderr)
	}
	lines := parseLabelled(t, r.stdout)
	seed, err := keys.Load(seedPath) // refuses a seed file group or others can read
	if err != nil {
		t.Fatal(err)
	}
	pub, err := awr.ParseDIDKey(lines["did"])
	if err != nil {
		t.Fatalf("printed did %q: %v", lines["did"], err)
	}
	if !pub.Equal(seed.LogKey().Public()) {
		t.Errorf("printed did is not the seed's log key")
	}
	v, err := note.NewVerifier(lines["log-vkey"])
	if err != nil || v.Name() != "e2e.example/log" {
		t.Fatalf("log-vkey %q: %v", lines["log-vkey"], err)
	}
	want, _ := note.NewEd25519VerifierKey("e2e.example/log", seed.LogKey().Public().(ed25519.PublicKey))
	if lines["log-vkey"] != want {
		t.Errorf("log-vkey %q, want %q", lines["log-vkey"], want)
	}
	wantW, _ := keys.CosignatureVerifierKey("e2e.example/witness", seed.WitnessKey().Public().(ed25519.PublicKey))
	if lines["witness-vkey"] != wantW {
		t.Errorf("witness-vkey %q, want %q", lines["witness-vkey"], wantW)
	}
	if want := format.PeerIDFromKey(seed.P2PKey().Public().(ed25519.PublicKey)); lines["peer-id"] != want {
		t.Errorf("peer-id %q, want %q", lines["peer-id"], want)
	}
	before := mustRead(t, seedPath)
	if r := histor(t, "", "keygen", "--out", seedPath); r.code != 1 || !strings.Contains(r.stderr, seedPath) {
		t.Errorf("keygen over an existing seed: exit %d, stderr %q; want 1 naming the file", r.code, r.stderr)
	}
	if mustRead(t, seedPath) != before {
		t.Error("keygen replaced an existing seed")
	}
	if r := histor(t, "", "keygen"); r.code != 2 {
		t.Errorf("keygen without --out: exit %d, want 2", r.code)
	}
}

// TestKeygenDescriptor: keygen writes the descriptor a node started on the seed would, so
// a peer can list it before the first start; the node then serves one naming the same keys.
func TestKeygenDescriptor(t *testing.T) {
	dir := t.TempDir()
	seedPath, descPath := filepath.Join(dir, "seed"), filepath.Join(dir, "b.descriptor")
	r := histor(t, "", "keygen", "--out", seedPath, "--origin", "b.example/log", "--descriptor", descPath,
		"--p2p-listen", "/ip4/192.0.2.7/tcp/4001", "--public-url", "https://b.example")
	if r.code != 0 {
		t.Fatalf("keygen: exit %d: %s", r.code, r.stderr)
	}
	lines := parseLabelled(t, r.stdout)
	o, err := format.VerifyObserver([]byte(mustRead(t, descPath)), lines["did"])
	if err != nil {
		t.Fatalf("the written descriptor: %v", err)
	}
	if o.PeerID() != lines["peer-id"] || o.Origin != "b.example/log" || o.URL != "https://b.example" ||
		len(o.Addrs) != 1 || o.Addrs[0] != "/ip4/192.0.2.7/tcp/4001" {
		t.Errorf("descriptor %+v does not match the keys printed %v", o, lines)
	}
	if r := histor(t, "", "keygen", "--out", filepath.Join(dir, "seed2"), "--descriptor", descPath, "--p2p-listen", "nonsense"); r.code != 2 {
		t.Errorf("a malformed --p2p-listen: exit %d, want 2: %s", r.code, r.stderr)
	}
}

func parseLabelled(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("unlabelled output line %q", line)
		}
		m[k] = v
	}
	if len(m) != 4 || m["did"] == "" || m["log-vkey"] == "" || m["witness-vkey"] == "" || m["peer-id"] == "" {
		t.Fatalf("keygen printed %q, want did, log-vkey, witness-vkey and peer-id lines", out)
	}
	return m
}

func TestLabelVerify(t *testing.T) {
	vectors := []string{"../../log/awr/testdata/pass-01-pattern-scan.awr.json", "../../log/awr/testdata/pass-03-tool-set-continuity.awr.json"}
	if r := histor(t, "", append([]string{"label", "verify"}, vectors...)...); r.code != 0 {
		t.Errorf("vector labels: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	mangled := filepath.Join(t.TempDir(), "mangled.json")
	os.WriteFile(mangled, []byte(strings.Replace(mustRead(t, vectors[0]), `"verdict": "pass"`, `"verdict": "fail"`, 1)), 0o644)
	if mustRead(t, mangled) == mustRead(t, vectors[0]) {
		t.Fatal("the mangle did not change the label")
	}
	if r := histor(t, "", "label", "verify", vectors[1], mangled); r.code != 1 {
		t.Errorf("a changed label among good ones: exit %d, want 1", r.code)
	}
	if r := histor(t, "", "label", "verify"); r.code != 2 {
		t.Errorf("no files: exit %d, want 2", r.code)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(freePort(t, func(a string) (io.Closer, error) { return net.Listen("tcp", a) }))
}

// freePort is a port free now below Linux's ephemeral range (32768..60999), so that the
// outgoing connections and ":0" listeners of tests running beside this one cannot take it in
// the seconds before a process started later binds it (a descriptor names it up front).
func freePort(t *testing.T, listen func(addr string) (io.Closer, error)) int {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(12000)
		if c, err := listen("127.0.0.1:" + strconv.Itoa(port)); err == nil {
			c.Close()
			return port
		}
	}
	t.Fatal("no free port in 20000..31999 after 100 tries")
	return 0
}

// server is a running `histor serve`.
type server struct {
	cmd    *exec.Cmd
	addr   string
	stderr *bytes.Buffer
	done   chan error
}

// startServe starts `histor serve` over data with the test origin and, unless
// flags set it, no crawl.
func startServe(t *testing.T, data string, flags ...string) *server {
	t.Helper()
	s := &server{addr: freeAddr(t), stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	if len(flags) == 0 {
		flags = []string{"--crawl-interval", "0"}
	}
	args := append([]string{"serve", "--data", data, "--http", s.addr, "--origin", "e2e.example/log"}, flags...)
	s.cmd = exec.Command(bin, args...)
	s.cmd.Env = cleanEnv()
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// waitHealthy polls /health until it answers 200, or the process exits.
func (s *server) waitHealthy(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("serve exited early (%v): %s", err, s.stderr)
		default:
		}
		if resp, err := http.Get("http://" + s.addr + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("serve never became healthy: %s", s.stderr)
}

func (s *server) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("serve exited with %v after SIGTERM: %s", err, s.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

func TestServeAuditAndStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and stops real node processes; skipped under -short")
	}
	data := t.TempDir()
	s := startServe(t, data)
	s.waitHealthy(t)
	code, cp := get(t, "http://"+s.addr+"/log/checkpoint")
	if code != 200 || !strings.HasPrefix(cp, "e2e.example/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n\n— e2e.example/log ") {
		t.Errorf("checkpoint of a new log: %d %q", code, cp)
	}
	state := filepath.Join(t.TempDir(), "sth.json")
	// A fresh node signs no head over its empty tree (as HISTOR): nothing
	// to audit yet, and nothing kept.
	if r := histor(t, "", "audit", "http://"+s.addr, "--state", state, "--tiles"); r.code != 0 || !strings.Contains(r.stdout, "nothing to audit yet") {
		t.Errorf("audit of a fresh node: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	s.stop(t)
	if r := histor(t, "", "audit", "http://"+s.addr, "--state", state); r.code != 2 || !strings.Contains(r.stderr, "AUDIT INCOMPLETE") {
		t.Errorf("audit of a stopped node: exit %d, stderr %q; want 2", r.code, r.stderr)
	}
	if r := histor(t, "", "log", "fsck", "--data", data); r.code != 0 || !strings.Contains(r.stdout, "0 problems") {
		t.Errorf("fsck of a cleanly stopped node: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	// A restart over the same directory serves the same key.
	s2 := startServe(t, data)
	s2.waitHealthy(t)
	if r := histor(t, "", "audit", "http://"+s2.addr, "--state", state); r.code != 0 {
		t.Errorf("audit after restart: exit %d: %s", r.code, r.stderr)
	}
	s2.stop(t)
}

func TestCorruptDataDirIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real node processes; skipped under -short")
	}
	garble := func(b []byte) []byte {
		for i := len(b) / 4; i < len(b)*3/4+1 && i < len(b); i++ {
			b[i] = 0xff
		}
		return b
	}
	truncate := func(b []byte) []byte { return b[:len(b)/2] }
	t.Run("garbled", func(t *testing.T) { refusesDamage(t, garble) })
	t.Run("truncated", func(t *testing.T) { refusesDamage(t, truncate) })
}

func refusesDamage(t *testing.T, damage func([]byte) []byte) {
	data := t.TempDir()
	s := startServe(t, data)
	s.waitHealthy(t)
	s.stop(t)
	damageDir(t, filepath.Join(data, "log"), damage)

	s = startServe(t, data)
	select {
	case err := <-s.done:
		if err == nil {
			t.Fatal("serve over a garbled data directory exited 0")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve kept running over a garbled data directory")
	}
	if msg := s.stderr.String(); !strings.Contains(msg, "corrupt log") || strings.Contains(msg, "panic") {
		t.Errorf("serve does not say plainly what is wrong: %q", msg)
	}
	if _, err := http.Get("http://" + s.addr + "/log/checkpoint"); err == nil {
		t.Error("something answered on the address of the refused node")
	}
	if r := histor(t, "", "log", "fsck", "--data", data); r.code != 1 || !strings.Contains(r.stdout, "problem") || strings.Contains(r.stderr, "panic") {
		t.Errorf("fsck of a garbled directory: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
}

// damageDir rewrites every file of dir but Pebble's LOCK with damage.
func damageDir(t *testing.T, dir string, damage func([]byte) []byte) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "LOCK" {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil || len(b) == 0 {
			continue
		}
		if err := os.WriteFile(path, damage(b), 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no file to damage in the log directory")
	}
}

func TestUsageAndUnknownCommands(t *testing.T) {
	if r := histor(t, "", "frobnicate"); r.code != 2 || !strings.Contains(r.stderr, "frobnicate") {
		t.Errorf("unknown command: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := histor(t, "", "audit"); r.code != 2 {
		t.Errorf("audit without BASE: exit %d, want 2", r.code)
	}
	if r := histor(t, "", "log", "fsck"); r.code != 2 {
		t.Errorf("fsck without --data: exit %d, want 2", r.code)
	}
	for _, cmd := range [][]string{{"--help"}, {"serve", "--help"}, {"audit", "--help"}, {"log", "fsck", "--help"}, {"label", "verify", "--help"}} {
		if r := histor(t, "", cmd...); r.code != 0 || !strings.Contains(r.stdout, "USAGE") {
			t.Errorf("histor %v: exit %d, no usage", cmd, r.code)
		}
	}
}
