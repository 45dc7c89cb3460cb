package gossip

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
)

// observer is one test observer's keys and descriptor.
type observer struct {
	seed   *keys.Seed
	origin string
	did    string
	desc   []byte
}

func newObserver(t testing.TB, i int) *observer {
	t.Helper()
	seed, err := keys.NewSeed(bytes.Repeat([]byte{byte(i + 1)}, keys.SeedSize))
	if err != nil {
		t.Fatal(err)
	}
	o := &observer{seed: seed, origin: fmt.Sprintf("histor%d.test/log", i)}
	w, _ := format.NewCosigner(fmt.Sprintf("histor%d.test/witness", i), seed.WitnessKey().Public().(ed25519.PublicKey))
	o.desc, err = format.SignObserver(seed.LogKey(), format.Observer{
		Origin: o.origin, Witness: w, P2PKey: seed.P2PKey().Public().(ed25519.PublicKey),
		URL: fmt.Sprintf("https://histor%d.test", i), Time: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	o.did = awr.DIDKey(seed.LogKey().Public().(ed25519.PublicKey))
	return o
}

// head signs a head of size n with a root that depends on n and salt only.
func (o *observer) head(t testing.TB, n uint64, salt byte) (sth, cp []byte) {
	t.Helper()
	return o.headAt(t, n, salt, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
}

// futureHead is head of size n signed at time at.
func (o *observer) futureHead(t testing.TB, n uint64, at time.Time) (sth, cp []byte) {
	t.Helper()
	return o.headAt(t, n, 0, at)
}

func (o *observer) headAt(t testing.TB, n uint64, salt byte, now time.Time) (sth, cp []byte) {
	t.Helper()
	root := sha256.Sum256([]byte{byte(n), byte(n >> 8), salt})
	sth, err := format.SignSTH(o.seed.LogKey(), o.did, n, root, now)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := keys.NoteSigner(o.origin, o.seed.LogKey())
	cp, err = format.SignCheckpoint(signer, format.Checkpoint{Origin: o.origin, Size: n, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	return sth, cp
}

// fakeLog serves one settable head and canned proofs and labels.
type fakeLog struct {
	mu      sync.Mutex
	sth, cp []byte
}

func (f *fakeLog) set(sth, cp []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sth, f.cp = sth, cp
}

func (f *fakeLog) Latest() ([]byte, []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sth, f.cp
}

func (f *fakeLog) ConsistencyProof(first, second uint64) ([][32]byte, error) {
	if second > 100 {
		return nil, ErrNotFound
	}
	return [][32]byte{{byte(first)}, {byte(second)}}, nil
}

func (f *fakeLog) InclusionProof(index, size uint64) ([][32]byte, error) {
	return [][32]byte{{byte(index)}}, nil
}

func (f *fakeLog) Label(id string) (uint64, []byte, error) {
	if id != "urn:uuid:1" {
		return 0, nil, ErrNotFound
	}
	return 7, []byte(`{"id":"urn:uuid:1"}`), nil
}

// mockHost adds observer o's host to mn.
func mockHost(t testing.TB, mn mocknet.Mocknet, o *observer, i int) host.Host {
	t.Helper()
	priv, err := crypto.UnmarshalEd25519PrivateKey(o.seed.P2PKey())
	if err != nil {
		t.Fatal(err)
	}
	h, err := mn.AddPeer(priv, ma.StringCast(fmt.Sprintf("/ip4/10.0.0.%d/tcp/4001", i+1)))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// testConfig is a config with short timings for observer o among all.
func testConfig(o *observer, all []*observer, addrs map[string]string, l Log) Config {
	cfg := Config{
		Identity: o.seed.P2PKey(), Descriptor: o.desc, Log: l,
		Heartbeat: 50 * time.Millisecond, Republish: time.Hour,
		ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond,
		RequestTimeout: 2 * time.Second,
	}
	for _, p := range all {
		if p == o {
			continue
		}
		cfg.AllowList = append(cfg.AllowList, p.did)
		cfg.Peers = append(cfg.Peers, Peer{DID: p.did, Addr: addrs[p.did]})
	}
	return cfg
}

// cluster is n observers on one mocknet, all linked, none started.
type cluster struct {
	mn    mocknet.Mocknet
	obs   []*observer
	logs  []*fakeLog
	hosts []host.Host
	nodes []*Node
}

func newCluster(t testing.TB, n int, edit func(i int, c *Config)) *cluster {
	t.Helper()
	c := &cluster{mn: mocknet.New()}
	t.Cleanup(func() { c.mn.Close() })
	addrs := map[string]string{}
	for i := range n {
		o := newObserver(t, i)
		h := mockHost(t, c.mn, o, i)
		c.obs, c.hosts = append(c.obs, o), append(c.hosts, h)
		addrs[o.did] = h.Addrs()[0].String() + "/p2p/" + h.ID().String()
	}
	if err := c.mn.LinkAll(); err != nil {
		t.Fatal(err)
	}
	c.nodes, c.logs = newNodes(t, c.obs, addrs, func(i int, cfg *Config) {
		cfg.Host = c.hosts[i]
		if edit != nil {
			edit(i, cfg)
		}
	})
	return c
}

// newNodes makes a node for each observer over a fake log of its own, none started, from
// testConfig edited by edit (nil: as it is); each is closed when the test ends.
func newNodes(t testing.TB, obs []*observer, addrs map[string]string, edit func(i int, cfg *Config)) ([]*Node, []*fakeLog) {
	t.Helper()
	var nodes []*Node
	var logs []*fakeLog
	for i, o := range obs {
		l := &fakeLog{}
		cfg := testConfig(o, obs, addrs, l)
		if edit != nil {
			edit(i, &cfg)
		}
		nd, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nd.Close() })
		nodes, logs = append(nodes, nd), append(logs, l)
	}
	return nodes, logs
}

func (c *cluster) start(t testing.TB) { t.Helper(); startNodes(t, c.nodes) }

// startNodes starts each node.
func startNodes(t testing.TB, nodes []*Node) {
	t.Helper()
	for _, nd := range nodes {
		if err := nd.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// eventually polls cond until it holds or the deadline passes: network timing is not ours
// to fix, so tests wait on conditions, never on fixed sleeps.
func eventually(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sees reports whether node nd holds a head of size n from observer o.
func sees(nd *Node, o *observer, n uint64) bool {
	h := nd.Heads()[o.did]
	return h != nil && h.STH.TreeSize == n
}
