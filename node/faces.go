package node

import (
	"crypto/ed25519"

	"github.com/histor-observer/histor/node/aimarket"
	"github.com/histor-observer/histor/node/check"
	"github.com/histor-observer/histor/node/mcpface"
)

// The node's faces for programs: the AIMarket peer (node/aimarket) and the
// MCP face at /mcp (node/mcpface). Both answer through the checker and the
// views; here is what they read of the node.

// newAIMarketPeer makes the AIMarket peer with the node's AIMarket key; its
// server and changes invokes are limited at /check's rate
// (ChecksPerMinute, MaxCheckClients), by a limiter of their own.
func newAIMarketPeer(cfg Config, key ed25519.PrivateKey, did string) (*aimarket.Peer, error) {
	return aimarket.New(aimarket.Config{
		Key: key, DID: did, PublicURL: cfg.PublicURL, TrustedProxies: cfg.TrustedProxies,
		InvokesPerMinute: cfg.ChecksPerMinute, MaxClients: cfg.MaxCheckClients, Now: cfg.Now,
	})
}

// aimarketRoutes are the AIMarket peer's routes: they read the peer, the
// checker and the read model as each request comes.
func (a *api) aimarketRoutes() []Route {
	return aimarket.Routes(aimarket.Mount{
		Peer:    func() *aimarket.Peer { return a.agent },
		Checker: func() *check.Checker { return a.check },
		Model: func() *aimarket.Model {
			rd := a.read.Load()
			if rd == nil {
				return nil
			}
			return &aimarket.Model{Catalog: rd.Catalog, Now: rd.now}
		},
		Logger: a.logger,
	})
}

// mcpFace builds the /mcp face over a: it reads a's checker, read model
// and view sources at every call.
func (n *Node) mcpFace(a *api) *mcpface.Face {
	return mcpface.New(mcpface.Config{
		Version: Version, Logger: n.cfg.Logger,
		Checker: func() *check.Checker { return a.check },
		Model: func() *mcpface.Model {
			rd := a.read.Load()
			if rd == nil {
				return nil
			}
			return &mcpface.Model{Catalog: rd.Catalog, Now: rd.now}
		},
		Sources: a.viewSources,
	})
}

// mcpRoutes is the MCP face's route, reading a's face as each request
// comes.
func (a *api) mcpRoutes() []Route { return mcpface.Routes(func() *mcpface.Face { return a.mcp }) }
