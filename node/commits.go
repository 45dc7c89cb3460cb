package node

import (
	"context"
	"crypto/ed25519"
	"log/slog"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/state"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/federation"
	"github.com/histor-observer/histor/node/notify"
	"github.com/histor-observer/histor/node/peers"
)

// commits hands what a crawl or a sandbox result committed to the parts that
// read it, the same way for both: the catalog updates those targets in
// place, the peer view takes this node's signed observations of the targets
// whose label or status changed (gossip carries them to the peers), and the
// security events look for new ones. It holds the parts it was made with.
type commits struct {
	catalog *catalog.Catalog
	st      *state.Store
	log     *hlog.Log
	fed     *federation.Federation
	events  *notify.Part
	origin  string
	key     ed25519.PrivateKey
	logger  *slog.Logger
}

func (n *Node) commits() *commits {
	return &commits{catalog: n.catalog, st: n.state, log: n.log, fed: n.fed, events: n.events,
		origin: n.cfg.LogOrigin, key: n.id.logKey, logger: n.cfg.Logger}
}

// commit hands on the targets committed, of which changed are the ones with
// a new label or status.
func (c *commits) commit(ctx context.Context, committed, changed []string) {
	c.update(committed)
	own, err := peers.OwnOf(c.st, c.log, changed, c.origin, c.key)
	c.publish(ctx, own, err)
}

// commitAll is commit with this node's observations of every target.
func (c *commits) commitAll(ctx context.Context, sum *crawl.Summary) {
	if sum != nil {
		c.update(sum.Committed)
	}
	own, err := peers.Own(c.st, c.log, c.origin, c.key)
	c.publish(ctx, own, err)
}

func (c *commits) update(committed []string) {
	if err := c.catalog.Update(committed); err != nil {
		c.logger.Error("updating the catalog with what was committed", "err", err)
	}
}

func (c *commits) publish(ctx context.Context, own []peers.Proven, err error) {
	if err != nil {
		c.logger.Error("making our observations for the peer view", "err", err)
	}
	c.fed.AddOwn(ctx, own)
	c.events.Kick()
}
