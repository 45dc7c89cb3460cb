package node

import (
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
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
)

// fedNode is one node of a federation test, with the keys its peers
// configure and its HTTP API on a real loopback listener.
type fedNode struct {
	name     string
	origin   string
	seedFile string
	seed     *keys.Seed
	ln       net.Listener
	url      string
	p2pPort  int
	node     *Node
	srv      *httptest.Server
	labels   int
}

// newFedNode makes the keys and the listener of a node; start opens it.
// Nodes with one seedName share one key (a log that forks).
func newFedNode(t *testing.T, name, seedName string, p2p bool) *fedNode {
	t.Helper()
	sum := sha256.Sum256([]byte("federation test seed " + seedName))
	seed, err := keys.NewSeed(sum[:])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	seedFile := filepath.Join(dir, "seed")
	if err := os.WriteFile(seedFile, sum[:], 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	fn := &fedNode{name: name, origin: seedName + ".test/log", seedFile: seedFile, seed: seed, ln: ln, url: "http://" + ln.Addr().String()}
	if p2p {
		fn.p2pPort = freePort(t)
	}
	return fn
}

// freePort finds a loopback TCP port nobody listens on now.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (fn *fedNode) witnessName() string { return strings.TrimSuffix(fn.origin, "/log") + "/witness" }
func (fn *fedNode) logPub() ed25519.PublicKey {
	return fn.seed.LogKey().Public().(ed25519.PublicKey)
}
func (fn *fedNode) did() string { return awr.DIDKey(fn.logPub()) }

func (fn *fedNode) logVkey(t *testing.T) string {
	v, err := keys.NoteVerifierKey(fn.origin, fn.logPub())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (fn *fedNode) witnessVkey(t *testing.T) string {
	v, err := keys.CosignatureVerifierKey(fn.witnessName(), fn.seed.WitnessKey().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (fn *fedNode) witnessLog(t *testing.T) string  { return fn.origin + "=" + fn.logVkey(t) }
func (fn *fedNode) witnessSpec(t *testing.T) string { return fn.url + "=" + fn.witnessVkey(t) }

// descriptorFile writes the descriptor a peer of fn configures.
func (fn *fedNode) descriptorFile(t *testing.T) string {
	cos, err := format.NewCosigner(fn.witnessName(), fn.seed.WitnessKey().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	desc, err := format.SignObserver(fn.seed.LogKey(), format.Observer{Origin: fn.origin, Witness: cos,
		P2PKey: fn.seed.P2PKey().Public().(ed25519.PublicKey), Addrs: []string{fn.p2pAddr()}, URL: "https://" + fn.name + ".test", Time: 1})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), fn.name+".descriptor")
	if err := os.WriteFile(path, desc, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func (fn *fedNode) p2pAddr() string { return fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", fn.p2pPort) }

// start opens the node with cfg (its own fields filled in) and serves its
// API on its listener.
func (fn *fedNode) start(t *testing.T, cfg Config) {
	t.Helper()
	cfg.DataDir, cfg.SeedFile, cfg.LogOrigin = t.TempDir(), fn.seedFile, fn.origin
	if fn.p2pPort != 0 {
		cfg.P2PListen = []string{fn.p2pAddr()}
		cfg.GossipHeartbeat = 50 * time.Millisecond
	}
	nd, err := New(cfg)
	if err != nil {
		t.Fatalf("%s: %v", fn.name, err)
	}
	if err := nd.Open(context.Background()); err != nil {
		t.Fatalf("%s: %v", fn.name, err)
	}
	t.Cleanup(func() { nd.Close() })
	fn.node = nd
	fn.srv = &httptest.Server{Listener: fn.ln, Config: &http.Server{Handler: nd.Handler()}}
	fn.srv.Start()
	t.Cleanup(fn.srv.Close)
}

// appendLabel appends one label whose bytes say which node made it.
func (fn *fedNode) appendLabel(t *testing.T) {
	t.Helper()
	fn.labels++
	label := fmt.Appendf(nil, `{"by":%q,"n":%d}`, fn.name, fn.labels)
	id := fmt.Sprintf("urn:uuid:00000000-0000-4000-8000-%012x", fn.labels)
	if _, err := fn.node.Log().Append(context.Background(), []hlog.Entry{{ID: id, Label: label}}, nil); err != nil {
		t.Fatal(err)
	}
}

func (fn *fedNode) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(fn.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (fn *fedNode) checkpoint(t *testing.T) []byte {
	t.Helper()
	status, b := fn.get(t, "/log/checkpoint")
	if status != 200 {
		t.Fatalf("%s /log/checkpoint: %d %s", fn.name, status, b)
	}
	return b
}

// policy is a tlog-policy for log, met when every one of witnesses cosigned.
func policy(t *testing.T, log *fedNode, witnesses ...*fedNode) *format.Policy {
	t.Helper()
	text := "log " + log.logVkey(t) + "\n"
	var names []string
	for _, w := range witnesses {
		text += "witness " + w.name + " " + w.witnessVkey(t) + "\n"
		names = append(names, w.name)
	}
	text += "group all-of-them all " + strings.Join(names, " ") + "\nquorum all-of-them\n"
	p, err := format.ParsePolicy([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// eventually polls cond until it holds or the deadline passes: these
// tests run real sockets and real libp2p hosts, whose timing no fake clock
// drives.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cosignedBy waits until log's /log/checkpoint at its current size meets
// the policy of all the witnesses.
func cosignedBy(t *testing.T, log *fedNode, witnesses ...*fedNode) []byte {
	t.Helper()
	p := policy(t, log, witnesses...)
	want := log.node.Log().Size()
	var cp []byte
	eventually(t, log.name+" cosigned", func() error {
		cp = log.checkpoint(t)
		c, _, err := p.Verify(cp)
		if err == nil && c.Size != want {
			err = fmt.Errorf("checkpoint of size %d, want %d", c.Size, want)
		}
		return err
	})
	return cp
}

// TestWitnessCosignsOverHTTP: a node whose witness witnesses another's log
// cosigns its checkpoints over HTTP, and the log serves them cosigned.
func TestWitnessCosignsOverHTTP(t *testing.T) {
	w := newFedNode(t, "w", "w", false)
	l := newFedNode(t, "l", "l", false)
	w.start(t, Config{WitnessLogs: []string{l.witnessLog(t)}})
	l.start(t, Config{Witnesses: []string{w.witnessSpec(t)}})
	for range 3 {
		l.appendLabel(t)
	}
	cp := cosignedBy(t, l, w)

	sum := sha256.Sum256([]byte(l.origin))
	status, monitored := w.get(t, "/"+hex.EncodeToString(sum[:])+"/checkpoint")
	if status != 200 {
		t.Fatalf("witness monitoring route: %d %s", status, monitored)
	}
	if _, _, err := policy(t, l, w).Verify(monitored); err != nil {
		t.Errorf("witness serves a checkpoint the policy refuses: %v", err)
	}
	if !strings.HasPrefix(string(cp), string(l.node.Log().Latest().Checkpoint)) {
		t.Errorf("/log/checkpoint is not the log's latest checkpoint with cosignatures:\n%s", cp)
	}

	// The log is no witness, and the witness witnesses only l.
	resp, err := http.Post(l.url+"/add-checkpoint", "text/plain", strings.NewReader("old 0\n\n"+string(cp)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("a node that witnesses nothing answered add-checkpoint %d, want 404", resp.StatusCode)
	}
	if status, _ := w.get(t, "/"+strings.Repeat("0", 64)+"/checkpoint"); status != 404 {
		t.Errorf("unknown origin hash: %d, want 404", status)
	}
}

// TestFederation runs three honest observers on loopback libp2p that
// witness each other and a log that forks: the honest ones cosign each
// other's heads, and when the forked log shows one of them a second tree,
// every honest node holds and serves the evidence and none cosigns the fork.
func TestFederation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five nodes and three libp2p hosts on loopback")
	}
	nodes := []*fedNode{newFedNode(t, "a", "a", true), newFedNode(t, "b", "b", true), newFedNode(t, "c", "c", true)}
	f1, f2 := newFedNode(t, "f1", "f", false), newFedNode(t, "f2", "f", false)
	descs := map[string]string{}
	for _, n := range nodes {
		descs[n.name] = n.descriptorFile(t)
	}
	for _, n := range nodes {
		var peers []string
		for _, p := range nodes {
			if p != n {
				peers = append(peers, descs[p.name])
			}
		}
		n.start(t, Config{Peers: peers, WitnessLogs: []string{f1.witnessLog(t)}})
	}
	waitConnected(t, nodes)

	t.Run("cosign each other", func(t *testing.T) {
		for _, n := range nodes {
			n.appendLabel(t)
			n.appendLabel(t)
		}
		for i, n := range nodes {
			cosignedBy(t, n, nodes[(i+1)%3], nodes[(i+2)%3])
		}
	})

	t.Run("fork", func(t *testing.T) {
		f1.start(t, Config{Witnesses: []string{nodes[0].witnessSpec(t), nodes[1].witnessSpec(t), nodes[2].witnessSpec(t)}})
		f1.appendLabel(t)
		cosignedBy(t, f1, nodes...)

		// The same key signs another tree of the same size, shown to a only.
		f2.name = "f2"
		f2.start(t, Config{Witnesses: []string{nodes[0].witnessSpec(t)}})
		f2.appendLabel(t)
		if f2.node.Log().Latest().Root == f1.node.Log().Latest().Root {
			t.Fatal("the two logs hold one tree")
		}
		v, err := format.NewVerifier(f1.origin, f1.logPub())
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			eventually(t, n.name+" holds the evidence", func() error { return holdsEvidence(t, n, v) })
		}
		cp := f2.checkpoint(t)
		for _, n := range nodes {
			if _, _, err := policy(t, f2, n).Verify(cp); !errors.Is(err, format.ErrNoQuorum) {
				t.Errorf("%s cosigned the fork: %v\n%s", n.name, err, cp)
			}
		}
	})
}

// waitConnected waits until every node holds a verified head of each other.
func waitConnected(t *testing.T, nodes []*fedNode) {
	t.Helper()
	for _, n := range nodes {
		eventually(t, n.name+" has its peers' heads", func() error {
			heads := n.node.fed.Gossip().Heads()
			for _, p := range nodes {
				if p != n && heads[p.did()] == nil {
					return fmt.Errorf("no head of %s", p.name)
				}
			}
			return nil
		})
	}
}

// holdsEvidence: n lists a bundle about v's log at /api/v1/evidence and
// serves it, checkable with v.
func holdsEvidence(t *testing.T, n *fedNode, v note.Verifier) error {
	status, body := n.get(t, "/api/v1/evidence")
	if status != 200 {
		return fmt.Errorf("/api/v1/evidence: %d", status)
	}
	var list struct {
		Evidence []struct {
			Origin string `json:"origin"`
			URL    string `json:"url"`
		} `json:"evidence"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return err
	}
	for _, e := range list.Evidence {
		if e.Origin != v.Name() {
			continue
		}
		status, bundle := n.get(t, e.URL)
		if status != 200 {
			return fmt.Errorf("%s: %d", e.URL, status)
		}
		if _, err := format.VerifyEquivocation(bundle, v); err != nil {
			return fmt.Errorf("%s: %v", e.URL, err)
		}
		return nil
	}
	return fmt.Errorf("no evidence about %s in %s", v.Name(), body)
}
