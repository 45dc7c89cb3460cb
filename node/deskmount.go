package node

import (
	"slices"

	"github.com/histor-observer/histor/gossip"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/check"
	"github.com/histor-observer/histor/node/desk"
	"github.com/histor-observer/histor/node/federation"
	"github.com/histor-observer/histor/witness"
)

// deskRoutes are the desk's pages and static files (node/desk).
func (a *api) deskRoutes() []Route { return desk.Routes(a.deskMount()) }

// deskMount is what the desk's handlers read of the node, each as a
// request comes.
func (a *api) deskMount() desk.Mount {
	return desk.Mount{
		Log: a.log,
		Model: func() *desk.Model {
			rd := a.read.Load()
			if rd == nil {
				return nil
			}
			return &desk.Model{Catalog: rd.Catalog, PublicBase: rd.PublicBase, Now: rd.now}
		},
		Sources: a.viewSources,
		Checker: func() *check.Checker { return a.check },
		Federation: func() desk.Federation {
			if a.fed == nil {
				return nil
			}
			return deskFederation{a.fed}
		},
		Logger: a.logger,
	}
}

// deskFederation reads the federation as the desk's pages do.
type deskFederation struct{ f *federation.Federation }

func (d deskFederation) DID() string                    { return d.f.DID() }
func (d deskFederation) Cosigned(head hlog.Head) []byte { return d.f.CosignedCheckpoint(head) }
func (d deskFederation) Policy() *format.Policy         { return d.f.Policy() }

func (d deskFederation) Witness() desk.Witness {
	if w := d.f.Witness(); w != nil {
		return deskWitness{w}
	}
	return nil
}

// Peers are the last heads checked, by did, with the clocks gossip measured.
func (d deskFederation) Peers() []desk.PeerHead {
	var clocks map[string]gossip.Clock
	if g := d.f.Gossip(); g != nil {
		clocks = g.Clocks()
	}
	checked := d.f.CheckedHeads()
	out := make([]desk.PeerHead, 0, len(checked))
	for did, h := range checked {
		p := desk.PeerHead{DID: did, Origin: h.Checkpoint.Origin, Size: h.STH.TreeSize, Time: h.STH.Time,
			Cosigners: slices.Clone(h.Cosigners)}
		if k, ok := clocks[did]; ok {
			p.Clock = &desk.Clock{Offset: k.Offset, RTT: k.RTT, At: k.At}
		}
		out = append(out, p)
	}
	return out
}

// deskWitness reads the witness as the Network page does.
type deskWitness struct{ w *witness.Witness }

func (d deskWitness) Logs() []string { return d.w.Logs() }

// Evidence is at most what /api/v1/evidence lists.
func (d deskWitness) Evidence() ([]desk.HeldEvidence, error) {
	list, err := d.w.ListEvidence()
	if err != nil {
		return nil, err
	}
	list = list[:min(len(list), federation.MaxEvidenceList)]
	out := make([]desk.HeldEvidence, len(list))
	for i, e := range list {
		out[i] = desk.HeldEvidence{ID: e.ID, Origin: e.Origin, Kind: e.Kind.String(), Seen: e.Seen}
	}
	return out, nil
}
