package node

import (
	"context"
	"path/filepath"

	"github.com/histor-observer/histor/node/federation"
	"github.com/histor-observer/histor/node/notify"
	"github.com/histor-observer/histor/node/peers"
)

// DefaultEventsInterval is how often the node looks for new facts to turn
// into security events when Config.EventsInterval is zero.
const DefaultEventsInterval = notify.DefaultInterval

// EventsDir is where the node keeps its security events (and the webhook
// deliveries' state): DataDir/events.
func (n *Node) EventsDir() string { return filepath.Join(n.cfg.DataDir, "events") }

// openEvents opens the notifications part over the crawl state's change
// records, the peer view and the witness's evidence.
func (n *Node) openEvents(ctx context.Context) error {
	p, err := notify.Open(ctx, notify.Config{
		Dir: n.EventsDir(), Key: n.id.logKey, DID: n.id.did, Interval: n.cfg.EventsInterval, Logger: n.cfg.Logger,
		Changes: n.state, Splits: fedSplits{n.fed}, Evidence: fedEvidence{n.fed},
	})
	if err != nil {
		return err
	}
	n.events = p
	return nil
}

func (n *Node) closeEvents() error {
	err := n.events.Close()
	n.events = nil
	return err
}

// fedSplits is the federation's peer view as the notifications part reads
// it.
type fedSplits struct{ f *federation.Federation }

// SplitView is the peer view now, or nil while there is none.
func (s fedSplits) SplitView() notify.SplitView {
	pv := s.f.Peers()
	if pv == nil {
		return nil
	}
	return peerSplits{pv}
}

// peerSplits is one peer view's split servers.
type peerSplits struct{ pv *peers.Store }

// SplitServers lists the servers in a split view.
func (s peerSplits) SplitServers() []string { return s.pv.SplitServers() }

// Split is what the observers of server id hold and how far they agree.
func (s peerSplits) Split(id string) (notify.Split, error) {
	obs, err := s.pv.Observers(id)
	if err != nil {
		return notify.Split{}, err
	}
	out := notify.Split{Observers: make([]notify.Observer, 0, len(obs))}
	for _, o := range obs {
		out.Observers = append(out.Observers, notify.Observer{DID: o.DID, Endpoint: o.Endpoint, Digest: o.Digest, Status: o.Status,
			ObservedAt: o.ObservedAt, LabelID: o.LabelID, LeafIndex: o.LeafIndex, HeadSize: o.HeadSize})
	}
	ag := s.pv.Agreement(id)
	out.Agreement, out.Digests = ag.Status, ag.Counts.Digests
	return out, nil
}

// fedEvidence is the witness's evidence as the notifications part reads it;
// none without a witness.
type fedEvidence struct{ f *federation.Federation }

// ListEvidence lists the equivocation bundles the witness holds.
func (e fedEvidence) ListEvidence() ([]notify.EvidenceItem, error) {
	w := e.f.Witness()
	if w == nil {
		return nil, nil
	}
	list, err := w.ListEvidence()
	if err != nil {
		return nil, err
	}
	out := make([]notify.EvidenceItem, 0, len(list))
	for _, ev := range list {
		out = append(out, notify.EvidenceItem{ID: ev.ID, Origin: ev.Origin, Kind: ev.Kind.String(), Seen: ev.Seen, Bundle: ev.Bundle})
	}
	return out, nil
}
