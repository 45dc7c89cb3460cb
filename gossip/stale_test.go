package gossip

import (
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"

	"github.com/histor-observer/histor/gossip/wire"
)

// TestOlderHeadReplayed: a member's older head, signed by it and replayed after a newer one
// (by a forwarder or the pull path), is ignored without a signature check and never replaces
// the newer head; the same head again is no news.
func TestOlderHeadReplayed(t *testing.T) {
	c := newCluster(t, 2, nil)
	oldSTH, oldCP := c.obs[1].head(t, 3, 0)
	c.logs[1].set(c.obs[1].head(t, 7, 0))
	c.start(t)
	eventually(t, "the newer head", 10*time.Second, func() bool { return sees(c.nodes[0], c.obs[1], 7) })
	res, hd := c.nodes[0].checkHead(wire.EncodeHead(oldSTH, oldCP))
	if res.v != pubsub.ValidationIgnore || res.why != "stale head" || hd != nil {
		t.Errorf("an older head: %v %q %v; want ignored as stale", res.v, res.why, hd)
	}
	sth, cp := c.logs[1].Latest()
	if res, hd := c.nodes[0].checkHead(wire.EncodeHead(sth, cp)); res.v != pubsub.ValidationIgnore || hd != nil {
		t.Errorf("the same head again: %v %q; want ignored", res.v, res.why)
	}
	if !sees(c.nodes[0], c.obs[1], 7) {
		t.Errorf("the node's head of the peer is %d, want 7", c.nodes[0].Heads()[c.obs[1].did].STH.TreeSize)
	}
}
