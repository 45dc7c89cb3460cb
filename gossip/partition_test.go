package gossip

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
)

// partition is a connection gater that refuses every connection with the peers cut off, so a
// test can split real hosts apart and join them again.
type partition struct {
	mu      sync.Mutex
	cut     map[peer.ID]bool
	refused int
}

func (p *partition) set(cut bool, ids ...peer.ID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut == nil {
		p.cut = map[peer.ID]bool{}
	}
	for _, id := range ids {
		p.cut[id] = cut
	}
}

func (p *partition) open(id peer.ID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut[id] {
		p.refused++
	}
	return !p.cut[id]
}

func (p *partition) refusals() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

func (p *partition) InterceptPeerDial(id peer.ID) bool                 { return p.open(id) }
func (p *partition) InterceptAddrDial(id peer.ID, _ ma.Multiaddr) bool { return p.open(id) }
func (p *partition) InterceptAccept(network.ConnMultiaddrs) bool       { return true }
func (p *partition) InterceptSecured(_ network.Direction, id peer.ID, _ network.ConnMultiaddrs) bool {
	return p.open(id)
}
func (p *partition) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }

// TestPartitionHeals: a head published while a node was cut off reaches it after the link
// comes back, by the pull on reconnect alone (republishing is off: one hour). It runs on real
// TCP on loopback: mocknet can hand a stream opened while a connection closes to no
// connection at all, which then carries gossip across its partition.
func TestPartitionHeals(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets: run without -short")
	}
	var obs []*observer
	for i := range 3 {
		obs = append(obs, newObserver(t, i))
	}
	var (
		hosts []*partitionHost
		addrs = map[string]string{}
	)
	for _, o := range obs {
		h := newPartitionHost(t, o)
		hosts = append(hosts, h)
		addrs[o.did] = h.Addrs()[0].String() + "/p2p/" + h.ID().String()
	}
	nodes, logs := newNodes(t, obs, addrs, func(i int, cfg *Config) { cfg.Host = hosts[i] })
	for i, o := range obs {
		logs[i].set(o.head(t, 1, 0))
	}
	startNodes(t, nodes)
	eventually(t, "first heads", 20*time.Second, func() bool { return sees(nodes[2], obs[0], 1) && sees(nodes[2], obs[1], 1) })

	split := func(cut bool) {
		hosts[2].gate.set(cut, hosts[0].ID(), hosts[1].ID())
		for _, p := range hosts[:2] {
			p.gate.set(cut, hosts[2].ID())
		}
		if cut {
			for _, p := range hosts[:2] {
				hosts[2].Network().ClosePeer(p.ID())
				p.Network().ClosePeer(hosts[2].ID())
			}
		}
	}
	split(true)
	eventually(t, "the partition", 20*time.Second, func() bool {
		return len(hosts[2].Network().Peers()) == 0 &&
			hosts[0].Network().Connectedness(hosts[2].ID()) != network.Connected &&
			hosts[1].Network().Connectedness(hosts[2].ID()) != network.Connected
	})
	logs[0].set(obs[0].head(t, 5, 0))
	eventually(t, "gossip on the connected side", 20*time.Second, func() bool {
		nodes[0].PublishHead(context.Background())
		return sees(nodes[1], obs[0], 5)
	})
	// Node 2 keeps redialing its peers; the partition holds only if those dials were refused.
	eventually(t, "node 2's redials refused", 20*time.Second, func() bool { return hosts[2].gate.refusals() >= 4 })
	if sees(nodes[2], obs[0], 5) {
		t.Fatal("the cut-off node got the head across the partition")
	}
	split(false)
	eventually(t, "healed head", 20*time.Second, func() bool { return sees(nodes[2], obs[0], 5) })
}

// partitionHost is a real TCP host on loopback whose connections a partition gates.
type partitionHost struct {
	host.Host
	gate *partition
}

func newPartitionHost(t *testing.T, o *observer) *partitionHost {
	t.Helper()
	priv, err := crypto.UnmarshalEd25519PrivateKey(o.seed.P2PKey())
	if err != nil {
		t.Fatal(err)
	}
	gate := &partition{}
	h, err := libp2p.New(libp2p.Identity(priv), libp2p.Transport(tcp.NewTCPTransport),
		libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay(),
		libp2p.ConnectionGater(gate), libp2p.DisableMetrics())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return &partitionHost{Host: h, gate: gate}
}
