package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/histor-observer/histor/gossip"
	"github.com/histor-observer/histor/gossip/wire"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/peers"
)

// The peer view: what every observer of the federation saw, as node/peers
// keeps it. This node's own observations enter it after each crawl; a
// peer's enter it when gossip delivers its observation digest and the peer
// loop has fetched the label and an inclusion proof under the newest head
// of that peer this node verified.

// maxPendingObservations bounds the peers' observations waiting for the
// peer loop; a full queue drops (the observer publishes again after its
// next crawl).
const maxPendingObservations = 4096

// maxPendingPerObserver bounds one observer's share of that queue, so a peer
// publishing many servers cannot crowd out the others' observations.
const maxPendingPerObserver = 1024

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
		Now: n.cfg.Now, Logger: n.cfg.Logger,
	})
	if err != nil {
		return err
	}
	n.fed.peers.Store(s)
	return nil
}

func (n *Node) closePeers() error {
	s := n.fed.peers.Swap(nil)
	if s == nil {
		return nil
	}
	return s.Close()
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

// addOwn adds this node's own observations to the view and publishes them
// on gossip. Every crawl publishes all of them again under the new head:
// a peer that missed one (a partition, a restart) catches up without asking.
func (f *federation) addOwn(ctx context.Context, own []peers.Proven) {
	s := f.peers.Load()
	if s == nil {
		return
	}
	g := f.gos.Load()
	for _, p := range own {
		if err := s.Add(p); err != nil {
			f.logger.Warn("adding our own observation to the peer view", "err", err)
			continue
		}
		if g == nil {
			continue
		}
		if err := g.PublishObservation(ctx, p.Observation); err != nil && ctx.Err() == nil {
			f.logger.Warn("publishing our observation", "err", err)
		}
	}
}

// onObservation is gossip's OnObservation: it keeps the observation for
// the peer loop, the newest per observer and server, never blocking.
func (f *federation) onObservation(o *gossip.Observation) {
	key := o.Observer + "\n" + o.Server
	f.mu.Lock()
	_, have := f.pendingObs[key]
	if !have && (len(f.pendingObs) >= maxPendingObservations || f.pendingBy[o.Observer] >= maxPendingPerObserver) {
		f.mu.Unlock()
		f.metrics.observations.WithLabelValues("dropped").Inc()
		return
	}
	if !have {
		f.pendingBy[o.Observer]++
	}
	if cur := f.pendingObs[key]; cur == nil || !o.ObservedAt.Before(cur.ObservedAt) {
		f.pendingObs[key] = o
	}
	f.mu.Unlock()
	signal(f.peerWake)
}

// takeObservations empties the queue of peers' observations.
func (f *federation) takeObservations() map[string]*gossip.Observation {
	f.mu.Lock()
	defer f.mu.Unlock()
	pending := f.pendingObs
	f.pendingObs = map[string]*gossip.Observation{}
	clear(f.pendingBy)
	return pending
}

// proveObservation fetches what proves a peer's observation and adds it to
// the view. When the newest head verified for the peer does not hold the
// label yet, the peer's latest head is fetched and checked first.
func (f *federation) proveObservation(ctx context.Context, o *gossip.Observation) {
	s, g := f.peers.Load(), f.gos.Load()
	if s == nil || g == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, peerHeadTimeout)
	defer cancel()
	h := f.verifiedHead(o.Observer)
	if h == nil || h.STH.TreeSize <= o.LeafIndex {
		if latest, err := g.LatestHead(ctx, o.Observer); err == nil {
			f.checkPeerHead(ctx, latest)
		}
		if h = f.verifiedHead(o.Observer); h == nil || h.STH.TreeSize <= o.LeafIndex {
			f.logger.Debug("no checked head holds a peer's observation yet", "observer", o.Observer, "leaf", o.LeafIndex)
			f.metrics.observations.WithLabelValues("unproven").Inc()
			return
		}
	}
	p, err := fetchProven(ctx, g, o, h)
	if err == nil {
		err = s.Add(p)
	}
	f.noteObservation(o, err)
}

func fetchProven(ctx context.Context, g *gossip.Node, o *gossip.Observation, h *gossip.Head) (peers.Proven, error) {
	_, label, err := g.Label(ctx, o.Observer, o.LabelID)
	if err != nil {
		return peers.Proven{}, fmt.Errorf("fetching label %s: %w", o.LabelID, err)
	}
	proof, err := g.InclusionProof(ctx, o.Observer, o.LeafIndex, h.STH.TreeSize)
	if err != nil {
		return peers.Proven{}, fmt.Errorf("fetching inclusion proof of leaf %d: %w", o.LeafIndex, err)
	}
	_, sth, _, err := wire.SplitHead(h.Raw)
	if err != nil {
		return peers.Proven{}, err
	}
	return peers.Proven{Observation: o.Raw, Label: label, Proof: proof, Head: sth}, nil
}

// noteObservation logs and counts what became of a peer's observation.
// Stale and unknown are the ordinary outcomes of repeated gossip.
func (f *federation) noteObservation(o *gossip.Observation, err error) {
	switch {
	case err == nil:
		f.metrics.observations.WithLabelValues("kept").Inc()
	case errors.Is(err, peers.ErrStale), errors.Is(err, peers.ErrUnknownObserver):
		f.metrics.observations.WithLabelValues("stale").Inc()
		f.logger.Debug("peer observation not kept", "observer", o.Observer, "server", o.Server, "err", err)
	default:
		f.metrics.observations.WithLabelValues("refused").Inc()
		f.logger.Warn("peer observation not kept", "observer", o.Observer, "server", o.Server, "err", err)
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
