package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/internal/pebbledb"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/check"
	"github.com/histor-observer/histor/node/pkgruns"
	"github.com/histor-observer/histor/node/receipts"
	"github.com/histor-observer/histor/node/schedule"
)

// part is one piece the node owns. Open opens the parts in their order and
// Close stops them in reverse, so a part may use every part before it from
// its open to its close. A part that joins later (gossip, the witness, a
// sandbox queue) is one more entry in Node.parts.
type part struct {
	name  string
	open  func(ctx context.Context) error
	close func() error // nil: nothing to release
}

// parts is the node's parts in opening order. Each open sets the Node field
// the later parts read; each close clears it. Both run under n.mu.
func (n *Node) parts() []part {
	ps := []part{
		{"metrics", n.openMetrics, n.closeMetrics},
		{"log", n.openLog, n.closeLog},
		{"receipts", n.openReceipts, n.closeReceipts},
	}
	// The witness, its submitter, gossip, the mirror, the peers and their loops.
	ps = append(ps, n.fedParts()...)
	return append(ps, []part{
		{"crawl state", n.openState, n.closeState},
		{"crawler", n.openCrawler, n.closeCrawler},
		{"catalog", n.openCatalog, n.closeCatalog},
		{"events", n.openEvents, n.closeEvents},
		{"webhooks", n.openWebhooks, n.closeWebhooks},
		{"crawls", n.openCrawls, n.closeCrawls},
		{"sandbox", n.openSandbox, n.closeSandbox},
		{"api", n.openAPI, n.closeAPI},
	}...)
}

// openParts opens ps in order; if one fails, it closes the ones already
// open, in reverse, and reports the failure.
func openParts(ctx context.Context, ps []part) ([]part, error) {
	for i, p := range ps {
		if err := p.open(ctx); err != nil {
			return nil, errors.Join(fmt.Errorf("opening %s: %w", p.name, err), closeParts(ps[:i]))
		}
	}
	return ps, nil
}

// closeParts closes ps in reverse order, every one of them even when an
// earlier close fails.
func closeParts(ps []part) error {
	var errs []error
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].close == nil {
			continue
		}
		if err := ps[i].close(); err != nil {
			errs = append(errs, fmt.Errorf("closing %s: %w", ps[i].name, err))
		}
	}
	return errors.Join(errs...)
}

// openMetrics registers the API's and the federation's series (counted
// since New) with the Registry; the log and the crawler register their own as they open.
func (n *Node) openMetrics(context.Context) error {
	return n.metrics.register(n.cfg.registerer(), n.cfg.Registry, append(n.fed.Collectors(), newStoresCollector(&n.api))...)
}

func (n *Node) closeMetrics() error {
	n.metrics.unregister()
	return nil
}

func (n *Node) openLog(ctx context.Context) error {
	l, err := hlog.Open(ctx, hlog.Config{
		Dir:        n.LogDir(),
		Origin:     n.cfg.LogOrigin,
		Key:        n.id.logKey,
		DID:        n.id.did,
		Logger:     n.cfg.Logger,
		CacheBytes: n.cfg.CacheBytes,
		Now:        n.cfg.Now,
		Registerer: n.cfg.registerer(),
		OnHead:     n.fed.OnLogHead,
	})
	if err != nil {
		return err
	}
	n.log = l
	return nil
}

func (n *Node) closeLog() error {
	err := n.log.Close()
	n.log = nil
	return err
}

// openReceipts opens the receipts log, signed with the log key under the
// label log's origin with "/receipts".
func (n *Node) openReceipts(ctx context.Context) error {
	l, err := receipts.Open(ctx, receipts.Config{
		Dir:            n.ReceiptsDir(),
		Origin:         receipts.Origin(n.cfg.LogOrigin),
		Key:            n.id.logKey,
		DID:            n.id.did,
		Issuers:        n.cfg.ReceiptIssuers,
		TrustedProxies: n.cfg.TrustedProxies,
		MaxClients:     n.cfg.MaxCheckClients,
		MaxBodyBytes:   receipts.DefaultMaxBodyBytes,
		Now:            n.cfg.Now,
		Logger:         n.cfg.Logger,
		Registerer:     n.cfg.Registry,
	})
	if err != nil {
		return err
	}
	n.receipts = l
	return nil
}

func (n *Node) closeReceipts() error {
	err := n.receipts.Close()
	n.receipts = nil
	return err
}

func (n *Node) openState(context.Context) error {
	st, err := state.Open(n.StateDir(), n.cfg.Logger)
	if err != nil {
		return err
	}
	n.state = st
	return nil
}

func (n *Node) closeState() error {
	err := n.state.Close()
	n.state = nil
	return err
}

// openCrawler builds the crawler over the log and the state; it signs with
// the node's log key, so labels and heads share one issuer, as HISTOR's do.
func (n *Node) openCrawler(context.Context) error {
	cr, err := crawl.New(n.cfg.Crawl, n.log, n.id.logKey, n.id.did, n.state)
	if err != nil {
		return err
	}
	n.cr = cr
	return nil
}

func (n *Node) closeCrawler() error {
	n.cr.Close()
	n.cr = nil
	return nil
}

// openCatalog loads the reading API's model of the crawl state; every
// crawl updates it with what it committed (see crawlAndReload).
func (n *Node) openCatalog(context.Context) error {
	c, err := catalog.New(catalog.Options{Store: n.state, Log: n.log, Patterns: n.cr.PatternSet(), Now: n.cfg.Now, Logger: n.cfg.Logger})
	if err != nil {
		return err
	}
	n.catalog = c
	return nil
}

func (n *Node) closeCatalog() error {
	n.catalog = nil
	return nil
}

func (n *Node) openCrawls(context.Context) error {
	n.crawls = schedule.New(schedule.Config{Run: n.crawlAndReload(), Progress: n.cr.Progress,
		State: n.state, Logger: n.cfg.Logger, Now: n.now})
	return nil
}

// crawlAndReload is one crawl, followed by handing what it committed to the
// parts that read it (commits): the catalog updates the targets the crawl
// committed, and the peer view takes this node's observations of those it
// changed; after the first crawl of this process, of every target, so one a
// crash left out is in the view again. Then the sandbox part is asked for a
// round. It reads the parts when it is made: they outlive every crawl
// (closeCrawls).
func (n *Node) crawlAndReload() func(context.Context) (*crawl.Summary, error) {
	cr, c := n.cr, n.commits()
	first := true // the first crawl of this process gives the view every target once
	return func(ctx context.Context) (*crawl.Summary, error) {
		sum, err := cr.Run(ctx)
		switch {
		case first:
			c.commitAll(ctx, sum)
			first = false
		case sum != nil: // nil: the crawl did not run (ErrRunning) and wrote nothing
			c.commit(ctx, sum.Committed, sum.Changed)
		}
		n.afterCrawl()
		return sum, err
	}
}

// closeCrawls cancels the schedule and any crawl in progress and waits for
// them, so no crawl outlives the crawler, the state or the log.
func (n *Node) closeCrawls() error {
	n.crawls.Stop()
	n.crawls = nil
	return nil
}

// openSandbox opens the sandbox part (node/pkgruns) when it is enabled: the
// queue, the results handler, the scheduler and the local worker.
func (n *Node) openSandbox(ctx context.Context) error {
	if !n.cfg.Sandbox.Enabled {
		return nil
	}
	s, err := pkgruns.Open(ctx, n.sandboxConfig())
	if err != nil {
		return err
	}
	n.sbx.Store(s)
	return nil
}

// closeSandbox stops the sandbox part, so no result is handled after the
// crawler and the state close.
func (n *Node) closeSandbox() error {
	if s := n.sbx.Swap(nil); s != nil {
		return s.Close()
	}
	return nil
}

// openAPI renders the issuer answer (which names the crawler's pattern and
// record sets) and starts answering requests.
func (n *Node) openAPI(context.Context) error {
	doc, err := renderIssuer(n.cfg, n.id, n.cr.PatternSet(), n.cr.RecordSet())
	if err != nil {
		return err
	}
	n.id.issuerDoc = doc
	a := newAPI(n.log, doc, n.cfg)
	a.crawls = n.crawls
	a.receipts = n.receipts
	// The router binds a part's mounted routes to the part as it is built;
	// newAPI built it with none, so it is built again with the receipts log.
	a.router = httpx.NewRouter(a.routes())
	if a.agent, err = newAIMarketPeer(n.cfg, n.id.aimarketKey, n.id.did); err != nil {
		return err
	}
	a.fed = n.fed
	a.stores = n.openStores()
	a.events, a.webhooks = n.events, n.webhooks
	a.mcp = n.mcpFace(a)
	a.packages = n.packageView()
	a.metrics = n.metrics.handler(n.cfg.Registry, n.cfg.Logger)
	a.setReadAPI(&ReadAPI{Catalog: n.catalog, PublicBase: n.cfg.PublicURL, CrawlInterval: n.cfg.CrawlInterval, Now: n.cfg.Now})
	if a.check, err = check.New(n.checkConfig()); err != nil {
		return err
	}
	n.api.Store(a)
	return nil
}

// closeAPI stops answering once the requests in flight have finished.
func (n *Node) closeAPI() error {
	n.serving.Lock()
	n.api.Store(nil)
	n.serving.Unlock()
	return nil
}

// store is what /health and /metrics read of each of the node's Pebble stores.
type store interface {
	// Stopped is the failed write that stopped the store's writes, nil while it takes them.
	Stopped() error
	// PebbleMemory is what its Pebble holds in memory (C's when built with cgo).
	PebbleMemory() pebbledb.Mem
}

// openStores is every store of the node open now, by name: the log and the receipts log,
// the crawl state and events as open when it is made (openAPI, after every part, so a read
// never races their open or close), and the federation's, which it hands out safely at any
// time, as they are when called.
func (n *Node) openStores() func() map[string]store {
	fixed := map[string]store{}
	if n.log != nil {
		fixed["log"] = n.log
	}
	if n.receipts != nil {
		fixed["receipts"] = n.receipts
	}
	if n.state != nil {
		fixed["crawl_state"] = n.state
	}
	if n.events != nil {
		fixed["events"] = n.events
	}
	fed := n.fed
	return func() map[string]store {
		out := make(map[string]store, len(fixed)+3)
		for name, s := range fixed {
			out[name] = s
		}
		if w := fed.Witness(); w != nil {
			out["witness"] = w
		}
		if m := fed.Mirror(); m != nil {
			out["mirror"] = m
		}
		if p := fed.Peers(); p != nil {
			out["peers"] = p
		}
		return out
	}
}
