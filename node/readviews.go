package node

import (
	"github.com/histor-observer/histor/node/peers"
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
	s := a.fed.peers.Load()
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
