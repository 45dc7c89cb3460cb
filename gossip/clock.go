package gossip

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// ProtoTime answers the peer's wall clock, in decimal Unix milliseconds, so each node can
// show how far its peers' clocks are from its own. Nothing correct depends on it: heads and
// observations are ordered by their place in the log, never by their times.
const ProtoTime protocol.ID = "/histor/time/1.0.0"

// maxTimeResponse bounds a time answer: a status line and up to 20 digits.
const maxTimeResponse = 4 + 21

// Clock is how far a peer's wall clock was from this node's when last measured.
type Clock struct {
	// Offset is the peer's clock minus this node's, at the middle of the exchange.
	Offset time.Duration
	// RTT is the exchange's round trip: the offset is known to within half of it.
	RTT time.Duration
	// At is when it was measured, by this node's clock.
	At time.Time
}

// clocks keeps the last measurement of each peer, by did:key; guarded by mu.
type clocks struct {
	mu   sync.Mutex
	last map[string]Clock
}

func (c *clocks) set(did string, k Clock) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last[did] = k
}

func (c *clocks) all() map[string]Clock {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Clock, len(c.last))
	for k, v := range c.last {
		out[k] = v
	}
	return out
}

func (n *Node) serveTime(context.Context, string, []byte) (int, []byte) {
	return 200, strconv.AppendInt(nil, n.cfg.Now().UnixMilli(), 10)
}

// measureClock asks a federation peer for its time and keeps the offset.
func (n *Node) measureClock(ctx context.Context, id peer.ID) error {
	did := n.members.peerDID(id)
	if did == "" {
		return fmt.Errorf("peer %s is no federation peer", id)
	}
	before, start := n.cfg.Now(), time.Now()
	body, err := n.request(ctx, id, ProtoTime, nil, maxTimeResponse)
	rtt := time.Since(start)
	if err != nil {
		return err
	}
	ms, err := strconv.ParseInt(string(body), 10, 64)
	if err != nil || ms < 0 {
		return fmt.Errorf("peer %s answered the time %q", id, body)
	}
	mid := before.Add(rtt / 2)
	n.clocks.set(did, Clock{Offset: time.UnixMilli(ms).Sub(mid), RTT: rtt, At: mid})
	return nil
}

// Clocks returns the last measured clock offset of each connected or once connected peer,
// by did:key.
func (n *Node) Clocks() map[string]Clock { return n.clocks.all() }

// measureClocks measures every connected federation peer.
func (n *Node) measureClocks() {
	n.loopsMu.Lock()
	ids := make([]peer.ID, 0, len(n.loops))
	for id := range n.loops {
		ids = append(ids, id)
	}
	n.loopsMu.Unlock()
	for _, id := range ids {
		if n.ctx.Err() != nil {
			return
		}
		if n.host.Network().Connectedness(id) == network.Connected {
			if err := n.measureClock(n.ctx, id); err != nil {
				n.log.Debug("measuring a peer's clock", "peer", id, "err", err)
			}
		}
	}
}
