package gossip

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"
)

// TestLoopback runs three real hosts on 127.0.0.1, one on TCP, one on QUIC, one on both,
// with the gater: they converge, and a stranger that dials one is dropped.
func TestLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets: run without -short")
	}
	listen := [][]string{{"/ip4/127.0.0.1/tcp/0"}, {"/ip4/127.0.0.1/udp/0/quic-v1"}, {"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"}}
	var obs []*observer
	for i := range 3 {
		obs = append(obs, newObserver(t, i))
	}
	// Ports are known only once a host listens, so each node is built first without peers,
	// and the peers added from the others' addresses before Start.
	nodes, logs := newNodes(t, obs, nil, func(i int, cfg *Config) {
		cfg.Peers, cfg.Listen, cfg.Registerer = nil, listen[i], prometheus.NewRegistry()
	})
	for i, o := range obs {
		logs[i].set(o.head(t, uint64(i+1), 0))
	}
	for i, nd := range nodes {
		for j, o := range obs {
			if i != j {
				if err := nd.members.addPeer(Peer{DID: o.did, Addr: nodes[j].Addrs()[0]}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	startNodes(t, nodes)
	for i, nd := range nodes {
		for j, o := range obs {
			if i != j {
				eventually(t, fmt.Sprintf("node %d pulls node %d", i, j), 20*time.Second, func() bool { return sees(nd, o, uint64(j+1)) })
			}
		}
	}
	logs[1].set(obs[1].head(t, 7, 0))
	eventually(t, "gossip over QUIC", 20*time.Second, func() bool {
		nodes[1].PublishHead(context.Background())
		return sees(nodes[0], obs[1], 7) && sees(nodes[2], obs[1], 7)
	})

	stranger, err := libp2p.New(libp2p.NoListenAddrs, libp2p.DisableMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	ai, _ := peer.AddrInfoFromString(nodes[2].Addrs()[0])
	// The remote gater drops us once the handshake proves who we are: Connect returns nil (the
	// connection existed) or the drop itself, never a failure to reach the node at all, which
	// would leave the refusal below untested.
	if err := stranger.Connect(context.Background(), *ai); err != nil && !droppedAfterHandshake(err) {
		t.Fatalf("the stranger never reached the node: %v", err)
	}
	eventually(t, "the stranger dropped", 10*time.Second, func() bool {
		return stranger.Network().Connectedness(ai.ID) != network.Connected
	})
	if _, err := stranger.NewStream(context.Background(), ai.ID, ProtoHead); err == nil {
		t.Error("a stranger opened a federation stream")
	}
}

// droppedAfterHandshake reports whether a dial error is the remote closing a connection it
// had accepted, as its gater does to a stranger once the handshake names it.
func droppedAfterHandshake(err error) bool {
	for _, s := range []string{"EOF", "reset", "closed", "gater"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}
