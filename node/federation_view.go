package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/histor-observer/histor/gossip"
	"github.com/histor-observer/histor/gossip/wire"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/mirror"
	"github.com/histor-observer/histor/node/peers"
)

// The peer view: what every observer of the federation saw, as node/peers
// keeps it. This node's own observations enter it after each crawl; a
// peer's enter it when gossip delivers its observation digest and the peer
// loop has fetched the label and an inclusion proof under the newest head
// of that peer this node verified.

// PeersDir is where the node keeps its view of the federation's
// observations: DataDir/peers.
func (n *Node) PeersDir() string { return filepath.Join(n.cfg.DataDir, "peers") }

// openPeers opens the peer view store. A head counts only if it is this
// node's own latest or the one it verified for that observer (checkHead).
func (n *Node) openPeers(context.Context) error {
	var allow []string
	if fed := n.cfg.fed; fed != nil {
		allow = fed.allow
	}
	n.fed.self = n.id.did
	s, err := peers.Open(peers.Config{
		Dir: n.PeersDir(), Self: n.id.did, AllowList: allow, CheckHead: n.fed.checkHead,
		Prove: n.fed.proveMirrored, Now: n.cfg.Now, Logger: n.cfg.Logger,
	})
	if err != nil {
		return err
	}
	n.fed.peers.Store(s)
	var dids []string
	if m := n.fed.mirror.Load(); m != nil {
		dids = m.Observers()
	}
	return n.fed.loadMirrored(dids)
}

func (n *Node) closePeers() error {
	s := n.fed.peers.Swap(nil)
	if s == nil {
		return nil
	}
	return s.Close()
}

// proveMirrored is the peer store's Prove: the mirror's proof of a leaf.
func (f *federation) proveMirrored(did string, leaf uint64) (mirror.Proof, error) {
	m := f.mirror.Load()
	if m == nil {
		return mirror.Proof{}, errors.New("the mirror is closed")
	}
	return m.Prove(did, leaf)
}

// checkHead is the peer store's CheckHead: this node's own head is its
// own log's; a peer's must be the head the peer loop last proved
// consistent with every earlier one it checked of that peer.
func (f *federation) checkHead(did string, sth *format.STH) error {
	if did == f.self {
		return nil // signed by this node's own log key, checked by the store
	}
	h := f.verifiedHead(did)
	switch {
	case h == nil:
		return errors.New("no head of this observer checked here yet")
	case h.STH.TreeSize != sth.TreeSize || h.STH.Root != sth.Root:
		return fmt.Errorf("not the head checked here (size %d)", h.STH.TreeSize)
	}
	return nil
}

// verifiedHead is the newest head of did the peer loop verified; nil: none.
func (f *federation) verifiedHead(did string) *gossip.Head {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	return f.checked[did]
}

func (f *federation) setVerifiedHead(did string, h *gossip.Head) {
	f.cmu.Lock()
	f.checked[did] = h
	f.cmu.Unlock()
}

// addOwn adds this node's own observations to the view and publishes on gossip
// those whose label is new since the last publication (a hint that wakes the
// peers' mirrors; the head that carries the labels wakes them too). Nothing
// is published again: a peer that missed one reads it from this log.
func (f *federation) addOwn(ctx context.Context, own []peers.Proven) {
	s := f.peers.Load()
	if s == nil {
		return
	}
	g := f.gos.Load()
	since := f.ownPublished.Load()
	next := since
	for _, p := range own {
		if err := s.Add(p); err != nil {
			f.logger.Warn("adding our own observation to the peer view", "err", err)
			continue
		}
		o, err := wire.ParseObservationText(p.Observation)
		if g == nil || err != nil || o.LeafIndex < since {
			continue
		}
		next = max(next, o.TreeSize)
		if err := g.PublishObservation(ctx, p.Observation); err != nil && ctx.Err() == nil {
			f.logger.Warn("publishing our observation", "err", err)
		}
	}
	f.ownPublished.Store(next)
}

// onObservation is gossip's OnObservation, a latency hint only: an observation
// beyond what the mirror of its observer holds wakes the mirror loop for that
// observer. Nothing correct depends on receiving it.
func (f *federation) onObservation(o *gossip.Observation) {
	if f.mirrorBehind(o.Observer, o.LeafIndex+1) {
		f.metrics.observations.WithLabelValues("hint").Inc()
		f.wantMirror(o.Observer)
	}
}

// viewMembers is the observers and agreement members of server id; nil
// when the peer store is not open.
func (f *federation) viewMembers(id string) ([]any, map[string]any, error) {
	s := f.peers.Load()
	if s == nil {
		return nil, nil, nil
	}
	return s.Members(id)
}

// splitServers is the server ids in a split view, sorted; nil when the
// peer store is not open.
func (f *federation) splitServers() []string {
	if s := f.peers.Load(); s != nil {
		return s.SplitServers()
	}
	return nil
}
