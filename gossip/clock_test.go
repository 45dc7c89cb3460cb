package gossip

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestSkewedPeer: a peer whose clock runs an hour ahead is still heard (its heads from "the
// future" count by their tree size) and its offset is measured, then measured again when its
// clock jumps back.
func TestSkewedPeer(t *testing.T) {
	var skew atomic.Int64
	skew.Store(int64(time.Hour))
	c := newCluster(t, 2, func(i int, cfg *Config) {
		if i == 1 {
			cfg.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		}
	})
	c.logs[0].set(c.obs[0].head(t, 1, 0))
	c.logs[1].set(c.obs[1].futureHead(t, 5, time.Now().Add(time.Hour)))
	c.start(t)
	eventually(t, "node 0 takes the head signed an hour ahead", 10*time.Second, func() bool { return sees(c.nodes[0], c.obs[1], 5) })
	near := func(got, want time.Duration) bool { return got > want-5*time.Second && got < want+5*time.Second }
	eventually(t, "node 0 measures node 1 an hour ahead", 10*time.Second, func() bool {
		k, ok := c.nodes[0].Clocks()[c.obs[1].did]
		return ok && near(k.Offset, time.Hour)
	})
	if k := c.nodes[1].Clocks()[c.obs[0].did]; !near(k.Offset, -time.Hour) {
		t.Errorf("node 1 measured node 0 at %v, want about -1h", k.Offset)
	}
	skew.Store(0) // node 1's clock jumps back
	c.nodes[0].measureClocks()
	if k := c.nodes[0].Clocks()[c.obs[1].did]; !near(k.Offset, 0) {
		t.Errorf("after the jump back node 0 measured node 1 at %v, want about 0", k.Offset)
	}
	c.logs[1].set(c.obs[1].head(t, 6, 0)) // signed now, an hour before the head it follows
	eventually(t, "the next head, dated before the last", 10*time.Second, func() bool {
		c.nodes[1].PublishHead(context.Background())
		return sees(c.nodes[0], c.obs[1], 6)
	})
}
