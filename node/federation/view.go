package federation

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

// PeersDir is where the peer view of the federation's observations lives: Dir/peers.
func (f *Federation) PeersDir() string { return filepath.Join(f.cfg.Dir, "peers") }

// openPeers opens the peer view store. A head counts only if it is this
// node's own latest or the one it verified for that observer (checkHead).
func (f *Federation) openPeers(context.Context) error {
	var allow []string
	if fed := f.settings.Load(); fed != nil {
		allow = fed.allow
	}
	s, err := peers.Open(peers.Config{
		Dir: f.PeersDir(), Self: f.cfg.DID, AllowList: allow, CheckHead: f.checkHead,
		Prove: f.proveMirrored, Now: f.cfg.Now, Logger: f.cfg.Logger,
	})
	if err != nil {
		return err
	}
	f.peers.Store(s)
	var dids []string
	if m := f.mirror.Load(); m != nil {
		dids = m.Observers()
	}
	return f.loadMirrored(dids)
}

func (f *Federation) closePeers() error {
	s := f.peers.Swap(nil)
	if s == nil {
		return nil
	}
	return s.Close()
}

// proveMirrored is the peer store's Prove: the mirror's proof of a leaf.
func (f *Federation) proveMirrored(did string, leaf uint64) (mirror.Proof, error) {
	m := f.mirror.Load()
	if m == nil {
		return mirror.Proof{}, errors.New("the mirror is closed")
	}
	return m.Prove(did, leaf)
}

// checkHead is the peer store's CheckHead: this node's own head is its
// own log's; a peer's must be the head the peer loop last proved
// consistent with every earlier one it checked of that peer.
func (f *Federation) checkHead(did string, sth *format.STH) error {
	if did == f.cfg.DID {
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
func (f *Federation) verifiedHead(did string) *gossip.Head {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	return f.checked[did]
}

func (f *Federation) setVerifiedHead(did string, h *gossip.Head) {
	f.cmu.Lock()
	f.checked[did] = h
	f.cmu.Unlock()
}

// AddOwn adds this node's own observations to the view and publishes on gossip
// those whose label is new since the last publication (a hint that wakes the
// peers' mirrors; the head that carries the labels wakes them too). Nothing
// is published again: a peer that missed one reads it from this log.
func (f *Federation) AddOwn(ctx context.Context, own []peers.Proven) {
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
func (f *Federation) onObservation(o *gossip.Observation) {
	if f.mirrorBehind(o.Observer, o.LeafIndex+1) {
		f.metrics.observations.WithLabelValues("hint").Inc()
		f.wantMirror(o.Observer)
	}
}

// ViewMembers is the observers and agreement members of server id; nil
// when the peer store is not open.
func (f *Federation) ViewMembers(id string) ([]any, map[string]any, error) {
	s := f.peers.Load()
	if s == nil {
		return nil, nil, nil
	}
	return s.Members(id)
}

// SplitServers is the server ids in a split view, sorted; nil when the
// peer store is not open.
func (f *Federation) SplitServers() []string {
	if s := f.peers.Load(); s != nil {
		return s.SplitServers()
	}
	return nil
}
