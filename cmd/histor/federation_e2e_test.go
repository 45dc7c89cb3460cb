package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/crawl/registry/registrytest"

	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
)

// operatorToken is what the federation processes require on POST
// /api/v1/admin/crawl.
const operatorToken = "federation-e2e-operator-token"

// fedProc is one `histor serve` of the federation test: its keys, made
// here so that its peers' descriptors can name it before it starts, and the
// addresses it keeps across restarts.
type fedProc struct {
	name, origin string
	seed         *keys.Seed
	seedFile     string
	data         string
	http         string   // host:port, the same on every start
	listen       []string // libp2p multiaddrs; none runs no gossip
	extra        []string // the federation flags
	srv          *server
	registry     string      // the registry fixture p crawls
	tools        *mcp.Server // the one server it lists
	crawls       int
	top          *testing.T // the test whose end stops p, whichever subtest started it
}

// growingFixture is a registry listing one MCP server of p's alone, whose
// tool set gains a tool before each of p's crawls: a crawl that sees no
// change appends nothing, and these tests need each crawl to sign a head.
func (p *fedProc) growingFixture(t *testing.T) {
	t.Helper()
	p.tools = mcp.NewServer(&mcp.Implementation{Name: "e2e-" + p.name, Version: "1"}, nil)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.tools },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	reg := registrytest.Server(t, []registrytest.Entry{
		{Name: "io.example/" + p.name, Remotes: []registrytest.Remote{{Type: "streamable-http", URL: srv.URL + "/mcp"}}},
	})
	p.registry = reg.URL
}

func (p *fedProc) addTool() {
	p.crawls++
	p.tools.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool-%d", p.crawls), Description: "Tool number " + strconv.Itoa(p.crawls) + ".",
		InputSchema: &jsonschema.Schema{Type: "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { panic("a tool was called") })
}

// newFedProc makes the seed of a node whose log is origin; seedFile, when
// not "", is another node's seed (a log that forks).
func newFedProc(t *testing.T, name, origin, seedFile string, listen ...string) *fedProc {
	t.Helper()
	if seedFile == "" {
		seedFile = filepath.Join(t.TempDir(), "seed")
		if _, err := keys.Generate(seedFile); err != nil {
			t.Fatal(err)
		}
	}
	seed, err := keys.Load(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	return &fedProc{name: name, origin: origin, seed: seed, seedFile: seedFile, data: t.TempDir(),
		http: freeAddr(t), listen: listen, top: t}
}

func (p *fedProc) url() string         { return "http://" + p.http }
func (p *fedProc) witnessName() string { return strings.TrimSuffix(p.origin, "/log") + "/witness" }
func (p *fedProc) logPub() ed25519.PublicKey {
	return p.seed.LogKey().Public().(ed25519.PublicKey)
}

func (p *fedProc) logVkey(t *testing.T) string {
	v, err := keys.NoteVerifierKey(p.origin, p.logPub())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (p *fedProc) witnessVkey(t *testing.T) string {
	v, err := keys.CosignatureVerifierKey(p.witnessName(), p.seed.WitnessKey().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// descriptor writes the signed descriptor p's peers configure with --peer.
func (p *fedProc) descriptor(t *testing.T) string {
	t.Helper()
	cos, err := format.NewCosigner(p.witnessName(), p.seed.WitnessKey().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	desc, err := format.SignObserver(p.seed.LogKey(), format.Observer{Origin: p.origin, Witness: cos,
		P2PKey: p.seed.P2PKey().Public().(ed25519.PublicKey), Addrs: p.listen, URL: "https://" + p.name + ".e2e.example",
		Time: uint64(time.Now().Unix())})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), p.name+".descriptor")
	if err := os.WriteFile(path, desc, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// start runs `histor serve` for p and waits until it is healthy.
func (p *fedProc) start(t *testing.T) {
	t.Helper()
	args := []string{"--log-level", "warn", "serve", "--data", p.data, "--seed", p.seedFile, "--http", p.http, "--origin", p.origin,
		"--crawl-interval", "0", "--registry", p.registry, "--allow-private-targets", "--curated=false", "--operator-token", operatorToken}
	for _, a := range p.listen {
		args = append(args, "--p2p-listen", a)
	}
	s := &server{addr: p.http, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	s.cmd = exec.Command(bin, append(args, p.extra...)...)
	s.cmd.Env = cleanEnv()
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	p.top.Cleanup(func() { // after the process has ended: the buffer is written no more
		if p.top.Failed() {
			t.Logf("%s (started %s) wrote:\n%s", p.name, s.cmd.Args[1:], s.stderr)
		}
	})
	p.top.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			<-s.done
		}
	})
	p.srv = s
	s.waitHealthy(t)
}

// kill ends p with SIGKILL: no clean shutdown, no last write.
func (p *fedProc) kill(t *testing.T) {
	t.Helper()
	if err := p.srv.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.srv.done
}

// crawl starts a crawl on p and waits until it has grown p's log.
func (p *fedProc) crawl(t *testing.T) uint64 {
	t.Helper()
	before := p.treeSize(t)
	p.addTool()
	req, _ := http.NewRequest(http.MethodPost, p.url()+"/api/v1/admin/crawl", nil)
	req.Header.Set("x-histor-operator", operatorToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%s: POST /api/v1/admin/crawl: %d", p.name, resp.StatusCode)
	}
	var size uint64
	within(t, 20*time.Second, p.name+" crawled", func() error {
		if size = p.treeSize(t); size <= before {
			return fmt.Errorf("tree size %d", size)
		}
		return nil
	})
	return size
}

func (p *fedProc) treeSize(t *testing.T) uint64 {
	t.Helper()
	code, body := get(t, p.url()+"/health")
	var h struct {
		TreeSize uint64 `json:"tree_size"`
		Running  bool   `json:"crawl_running"`
	}
	if err := json.Unmarshal([]byte(body), &h); code != 200 || err != nil {
		t.Fatalf("%s /health: %d %s", p.name, code, body)
	}
	if h.Running {
		return 0 // a crawl appends as it goes: wait for its end
	}
	return h.TreeSize
}

// policy is met by a checkpoint of log cosigned by every one of witnesses.
func policy(t *testing.T, log *fedProc, witnesses ...*fedProc) *format.Policy {
	t.Helper()
	text := "log " + log.logVkey(t) + "\n"
	var names []string
	for _, w := range witnesses {
		text += "witness " + w.name + " " + w.witnessVkey(t) + "\n"
		names = append(names, w.name)
	}
	text += "group all all " + strings.Join(names, " ") + "\nquorum all\n"
	pol, err := format.ParsePolicy([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// cosigned waits until log's /log/checkpoint is of size and cosigned by
// every one of witnesses.
func cosigned(t *testing.T, bound time.Duration, log *fedProc, size uint64, witnesses ...*fedProc) {
	t.Helper()
	pol := policy(t, log, witnesses...)
	within(t, bound, log.name+" cosigned at its size", func() error {
		code, cp := get(t, log.url()+"/log/checkpoint")
		if code != 200 {
			return fmt.Errorf("/log/checkpoint: %d", code)
		}
		c, _, err := pol.Verify([]byte(cp))
		if err == nil && c.Size != size {
			err = fmt.Errorf("checkpoint of size %d, want %d", c.Size, size)
		}
		return err
	})
}

// within polls cond until it holds or bound passes: real processes on real
// sockets, which no fake clock drives.
func within(t *testing.T, bound time.Duration, what string, cond func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		err := cond()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > bound {
			t.Fatalf("%s: not within %v: %v", what, bound, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeUDPPort(t *testing.T) int {
	t.Helper()
	return freePort(t, func(a string) (io.Closer, error) { return net.ListenPacket("udp", a) })
}

func tcpAddr(t *testing.T) string {
	_, port, _ := net.SplitHostPort(freeAddr(t))
	return "/ip4/127.0.0.1/tcp/" + port
}

func quicAddr(t *testing.T) string {
	return "/ip4/127.0.0.1/udp/" + strconv.Itoa(freeUDPPort(t)) + "/quic-v1"
}

// witnessed is the checkpoint p's witness last cosigned of log, from the
// tlog-witness monitoring route.
func witnessed(t *testing.T, p, log *fedProc) (format.Checkpoint, error) {
	sum := sha256.Sum256([]byte(log.origin))
	code, body := get(t, p.url()+"/"+hex.EncodeToString(sum[:])+"/checkpoint")
	if code != 200 {
		return format.Checkpoint{}, fmt.Errorf("%s witness route for %s: %d", p.name, log.name, code)
	}
	v, err := note.NewVerifier(log.logVkey(t))
	if err != nil {
		t.Fatal(err)
	}
	return format.ParseCheckpoint([]byte(body), v)
}

// TestFederationProcesses runs three honest `histor serve` processes that
// are each other's federation peers and witnesses, over real TCP and QUIC on
// loopback, and a fourth peer whose key also signs a fork. a listens on both
// transports, b on QUIC only and c on TCP only, so both carry the traffic.
func TestFederationProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five histor processes with libp2p hosts on loopback; skipped under -short")
	}
	a := newFedProc(t, "a", "a.e2e.example/log", "", tcpAddr(t), quicAddr(t))
	b := newFedProc(t, "b", "b.e2e.example/log", "", quicAddr(t))
	c := newFedProc(t, "c", "c.e2e.example/log", "", tcpAddr(t))
	f1 := newFedProc(t, "f1", "f.e2e.example/log", "", tcpAddr(t))
	f2 := newFedProc(t, "f2", "f.e2e.example/log", f1.seedFile)
	honest := []*fedProc{a, b, c}
	for _, p := range []*fedProc{a, b, c, f1, f2} {
		p.growingFixture(t)
	}
	descs := map[*fedProc]string{}
	for _, p := range []*fedProc{a, b, c, f1} {
		descs[p] = p.descriptor(t)
	}
	for _, p := range []*fedProc{a, b, c, f1} {
		for q, d := range descs {
			if q != p {
				p.extra = append(p.extra, "--peer", d)
			}
		}
	}
	for _, p := range []*fedProc{a, b, c, f1} {
		p.start(t)
	}
	others := func(p *fedProc) []*fedProc {
		var out []*fedProc
		for _, q := range honest {
			if q != p {
				out = append(out, q)
			}
		}
		return out
	}
	// grow crawls each of ps and waits until every honest node's checkpoint
	// carries the other two's cosignatures at its size.
	grow := func(t *testing.T, bound time.Duration, ps ...*fedProc) {
		t.Helper()
		sizes := map[*fedProc]uint64{}
		for _, p := range ps {
			sizes[p] = p.crawl(t)
		}
		start := time.Now()
		for _, p := range honest {
			size, ok := sizes[p]
			if !ok {
				size = p.treeSize(t)
			}
			cosigned(t, bound, p, size, others(p)...)
		}
		t.Logf("cosigned by both other honest nodes %v after the crawls", time.Since(start).Round(time.Millisecond))
	}

	t.Run("convergence", func(t *testing.T) { grow(t, 15*time.Second, a, b, c) })

	t.Run("SIGKILL and restart", func(t *testing.T) {
		b.kill(t)
		b.start(t)
		grow(t, 20*time.Second, b, a)
	})

	t.Run("partition and heal", func(t *testing.T) {
		c.srv.stop(t)
		sizeA, sizeB := a.crawl(t), b.crawl(t)
		c.start(t)
		// c's witness catches up: the others resubmit the heads it missed,
		// and c pulls its peers' heads when it reconnects.
		took := within(t, 30*time.Second, "c cosigned a's and b's heads", func() error {
			for p, size := range map[*fedProc]uint64{a: sizeA, b: sizeB} {
				cp, err := witnessed(t, c, p)
				if err != nil {
					return err
				}
				if cp.Size != size {
					return fmt.Errorf("c cosigned %s at %d, want %d", p.name, cp.Size, size)
				}
			}
			return nil
		})
		t.Logf("c caught up %v after its restart", took.Round(time.Millisecond))
		cosigned(t, 10*time.Second, a, sizeA, b, c)
		cosigned(t, 10*time.Second, b, sizeB, a, c)
		// Anti-entropy: on reconnecting, c pulled heads it had not seen.
		_, metrics := get(t, c.url()+"/metrics")
		if news := counter(metrics, "histor_gossip_head_pulls_total", `outcome="news"`); news < 2 {
			t.Errorf("c pulled %v new heads from its peers on reconnect, want at least a's and b's", news)
		}
	})

	t.Run("fork", func(t *testing.T) {
		size := f1.crawl(t)
		cosigned(t, 15*time.Second, f1, size, honest...)
		honestRoot := func(p *fedProc) ([32]byte, error) {
			cp, err := witnessed(t, p, f1)
			return cp.Root, err
		}
		root, err := honestRoot(a)
		if err != nil {
			t.Fatal(err)
		}

		// The same key signs another tree in another data directory and
		// shows it to a's witness alone.
		f2.extra = []string{"--witness", a.url() + "=" + a.witnessVkey(t)}
		f2.start(t)
		if s := f2.crawl(t); s != size {
			t.Fatalf("the fork has size %d, the log %d: the test wants one size, two roots", s, size)
		}
		_, forked := get(t, f2.url()+"/log/checkpoint")
		v, err := note.NewVerifier(f1.logVkey(t))
		if err != nil {
			t.Fatal(err)
		}
		fc, err := format.ParseCheckpoint([]byte(forked), v)
		if err != nil || fc.Root == root {
			t.Fatalf("no fork to show: %v", err)
		}
		start := time.Now()
		for _, p := range honest {
			within(t, 10*time.Second, p.name+" serves the evidence", func() error { return servesEvidence(t, p, v) })
		}
		t.Logf("every honest node served the evidence %v after the fork was signed", time.Since(start).Round(time.Millisecond))

		// Shown the fork directly, every honest witness refuses it and
		// still holds the honest tree.
		for _, p := range honest {
			body := fmt.Sprintf("old %d\n\n%s", size, forked)
			resp, err := http.Post(p.url()+"/add-checkpoint", "text/plain", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusConflict && resp.StatusCode != http.StatusUnprocessableEntity {
				t.Errorf("%s answered the fork %d, want 409 or 422", p.name, resp.StatusCode)
			}
			if r, err := honestRoot(p); err != nil || r != root {
				t.Errorf("%s's witness holds another tree of f after the fork (%v)", p.name, err)
			}
		}
		_, forked = get(t, f2.url()+"/log/checkpoint")
		for _, p := range honest {
			if _, _, err := policy(t, f2, p).Verify([]byte(forked)); !errors.Is(err, format.ErrNoQuorum) {
				t.Errorf("%s cosigned the fork: %v\n%s", p.name, err, forked)
			}
		}
	})
}

// servesEvidence: p lists a bundle about v's log at /api/v1/evidence and
// serves it, checkable with v alone.
func servesEvidence(t *testing.T, p *fedProc, v note.Verifier) error {
	code, body := get(t, p.url()+"/api/v1/evidence")
	if code != 200 {
		return fmt.Errorf("/api/v1/evidence: %d", code)
	}
	var list struct {
		Evidence []struct {
			Origin string `json:"origin"`
			URL    string `json:"url"`
		} `json:"evidence"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		return err
	}
	for _, e := range list.Evidence {
		if e.Origin != v.Name() {
			continue
		}
		code, bundle := get(t, p.url()+e.URL)
		if code != 200 {
			return fmt.Errorf("%s: %d", e.URL, code)
		}
		if _, err := format.VerifyEquivocation([]byte(bundle), v); err != nil {
			return fmt.Errorf("%s: %v", e.URL, err)
		}
		return nil
	}
	return fmt.Errorf("no evidence about %s: %s", v.Name(), body)
}

// counter sums the Prometheus text samples of name whose labels hold label.
func counter(metrics, name, label string) float64 {
	var sum float64
	for line := range strings.SplitSeq(metrics, "\n") {
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok || !strings.Contains(rest, label) {
			continue
		}
		if v, err := strconv.ParseFloat(rest[strings.LastIndex(rest, " ")+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}
