package node

import (
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/node/peers"
	"github.com/histor-observer/histor/node/readapi"
	"github.com/histor-observer/histor/node/views"
)

// viewSources are what a server's page reads besides the catalog: the peer
// view and the sandbox's runs, each nil while the node has none.
func (a *api) viewSources() views.Sources {
	src := views.Sources{Peers: a.peerView()}
	if a.packages != nil {
		src.Packages = a.packages
	}
	return src
}

// peerView is the peer view as node/views reads it; nil while the peer
// store is not open.
func (a *api) peerView() views.Peers {
	if a.fed == nil {
		return nil
	}
	s := a.fed.Peers()
	if s == nil {
		return nil
	}
	return viewPeers{s}
}

// viewPeers reads a peer store as node/views' Peers.
type viewPeers struct{ *peers.Store }

// Split counts what the observers of server id hold.
func (p viewPeers) Split(id string) (views.Split, error) {
	obs, err := p.Observers(id)
	if err != nil {
		return views.Split{}, err
	}
	sp := views.Split{Observers: len(obs), Digests: p.Agreement(id).Counts.Digests}
	for _, o := range obs {
		sp.Since = max(sp.Since, o.ObservedAt)
	}
	return sp, nil
}

// readMount is what the reading API's routes (node/readapi) read of the
// node, each as a request comes.
func (a *api) readMount() readapi.Mount {
	return readapi.Mount{
		Model: func() *readapi.Model {
			rd := a.read.Load()
			if rd == nil {
				return nil
			}
			return &readapi.Model{Catalog: rd.Catalog, PublicBase: rd.PublicBase, CrawlInterval: rd.CrawlInterval, Now: rd.now}
		},
		Sources:  a.viewSources,
		Head:     func() hlog.Head { return a.log.Latest() },
		LogStats: a.logStats,
		Crawl:    a.crawlStats,
		Logger:   a.logger,
	}
}

// readRecordRoutes are the reading API's servers and changes routes.
func (a *api) readRecordRoutes() []Route { return readapi.RecordRoutes(a.readMount()) }

// readSummaryRoutes are the reading API's stats, badges and feed routes.
func (a *api) readSummaryRoutes() []Route { return readapi.SummaryRoutes(a.readMount()) }
