package gossip

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
)

// TestSetMembers grows and shrinks a running federation of real hosts on loopback, with the
// gater: nodes started with no members join when SetMembers names each other, an observer
// is refused until it is named, and one removed is disconnected, refused on its next dials,
// and its later heads no longer count.
func TestSetMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets: run without -short")
	}
	var obs []*observer
	var nodes []*Node
	var logs []*fakeLog
	for i := range 3 {
		o := newObserver(t, i)
		l := &fakeLog{}
		l.set(o.head(t, uint64(i+1), 0))
		cfg := testConfig(o, nil, nil, l)
		cfg.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
		nd, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nd.Close() })
		if err := nd.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		obs, nodes, logs = append(obs, o), append(nodes, nd), append(logs, l)
	}
	a, b, c := nodes[0], nodes[1], nodes[2]
	set := func(nd *Node, members ...int) error {
		var allow []string
		var peers []Peer
		for _, j := range members {
			allow = append(allow, obs[j].did)
			peers = append(peers, Peer{DID: obs[j].did, Addr: nodes[j].Addrs()[0]})
		}
		return nd.SetMembers(allow, peers)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(set(a, 1))
	must(set(b, 0))
	must(set(c, 0)) // c names a, a does not name c yet
	eventually(t, "a and b pull each other", 10*time.Second, func() bool { return sees(a, obs[1], 2) && sees(b, obs[0], 1) })
	time.Sleep(300 * time.Millisecond) // c's dials meet a's gater meanwhile
	if sees(a, obs[2], 3) || a.host.Network().Connectedness(c.host.ID()) == network.Connected {
		t.Fatal("a is linked to an observer it does not name")
	}

	must(set(a, 1, 2))
	eventually(t, "a pulls c once it names it", 10*time.Second, func() bool { return sees(a, obs[2], 3) })

	must(set(a, 2)) // b leaves
	eventually(t, "b disconnected", 10*time.Second, func() bool {
		return a.host.Network().Connectedness(b.host.ID()) != network.Connected
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := b.LatestHead(ctx, obs[0].did); err == nil {
		t.Fatal("a removed member was answered")
	}
	logs[1].set(obs[1].head(t, 9, 0))
	b.PublishHead(context.Background())
	logs[2].set(obs[2].head(t, 10, 0))
	eventually(t, "c's next head", 10*time.Second, func() bool {
		c.PublishHead(context.Background())
		return sees(a, obs[2], 10)
	})
	if sees(a, obs[1], 9) || a.host.Network().Connectedness(b.host.ID()) == network.Connected {
		t.Fatal("a removed member is still linked")
	}

	// A malformed list changes nothing.
	if err := a.SetMembers([]string{"did:key:nonsense"}, nil); err == nil {
		t.Fatal("a malformed allow-list was taken")
	}
	if d := a.members.peerDID(c.host.ID()); d != obs[2].did {
		t.Fatalf("a refused list changed the members: c is %q", d)
	}
}
