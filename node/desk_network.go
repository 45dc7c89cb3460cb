package node

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/histor-observer/histor/gossip"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/desk"
	"github.com/histor-observer/histor/node/federation"
)

// serveDeskNetwork renders /network: this observer and the others it
// checked, their heads and cosigners, and the evidence it holds.
func (a *api) serveDeskNetwork(w http.ResponseWriter, r *http.Request) {
	v, err := a.networkView()
	if err != nil {
		a.internal(w, r, "reading the network", err)
		return
	}
	a.renderDesk(w, r, http.StatusOK, "network", "Network", "network", v)
}

func (a *api) networkView() (*desk.NetworkView, error) {
	head := a.log.Latest()
	v := &desk.NetworkView{Self: desk.NetworkObserver{Origin: checkpointOrigin(head.Checkpoint)}}
	if head.STH != nil {
		v.Self.HeadSize, v.Self.HeadTime = head.Size, catalog.FormatTime(head.Time)
	}
	f := a.fed
	if f == nil {
		return v, nil
	}
	v.Self.DID = f.DID()
	v.Self.Cosigners = cosigners(f.CosignedCheckpoint(head), v.Self.Origin)
	if p := f.Policy(); p != nil && head.STH != nil {
		v.Policy = policyWords(p, f.CosignedCheckpoint(head))
	}
	if wit := f.Witness(); wit != nil {
		list, err := wit.ListEvidence()
		if err != nil {
			return nil, err
		}
		for _, e := range list[:min(len(list), federation.MaxEvidenceList)] {
			v.Evidence = append(v.Evidence, desk.Evidence{ID: e.ID, Origin: e.Origin, Kind: e.Kind.String(),
				Seen: e.Seen.UTC().Format(time.RFC3339), URL: "/api/v1/evidence/" + e.ID})
		}
		for _, o := range wit.Logs() {
			if o != v.Self.Origin {
				v.Witnessed = append(v.Witnessed, o)
			}
		}
	}
	v.Observers = checkedObservers(f, v.Evidence)
	return v, nil
}

// policyWords says when this log's head counts as witnessed, and whether
// the newest one does: the policy the Log page checks in the browser.
func policyWords(p *format.Policy, cp []byte) string {
	if p.Quorum == "none" {
		return "Witness policy: a head of this log counts as witnessed without any cosignature."
	}
	names := make([]string, len(p.Witnesses))
	for i, w := range p.Witnesses {
		names[i] = w.Cosigner.Name // the name its signature lines carry; w.Name means nothing outside the policy file
	}
	_, cosigned, err := p.Verify(cp)
	met := "meets it"
	if err != nil {
		met = "does not meet it yet"
	}
	return fmt.Sprintf("Witness policy: a head of this log counts as witnessed when the quorum %q of its %d listed witnesses (%s) cosigns it. "+
		"The newest head, cosigned by %d of them, %s.", p.Quorum, len(names), strings.Join(names, ", "), len(cosigned), met)
}

// checkedObservers are the peers whose heads this node checked, by did,
// each marked forked when evidence names its origin.
func checkedObservers(f *federation.Federation, ev []desk.Evidence) []desk.NetworkObserver {
	var clocks map[string]gossip.Clock
	if g := f.Gossip(); g != nil {
		clocks = g.Clocks()
	}
	checked := f.CheckedHeads()
	out := make([]desk.NetworkObserver, 0, len(checked))
	for did, h := range checked {
		o := desk.NetworkObserver{DID: did, Origin: h.Checkpoint.Origin, HeadSize: h.STH.TreeSize,
			HeadTime: catalog.FormatTime(h.STH.Time), Cosigners: slices.Clone(h.Cosigners)}
		if k, ok := clocks[did]; ok {
			o.Clock = clockWords(k)
		}
		o.Forked = slices.ContainsFunc(ev, func(e desk.Evidence) bool { return e.Origin == o.Origin })
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b desk.NetworkObserver) int { return strings.Compare(a.DID, b.DID) })
	return out
}

// clockWords says how far a peer's clock was from this node's: in step when the offset is
// within a second beyond what the round trip leaves unknown.
func clockWords(k gossip.Clock) string {
	off, slack := k.Offset, k.RTT/2+time.Second
	at := " (measured " + catalog.FormatTime(k.At) + ")"
	switch {
	case off > slack:
		return off.Round(time.Second).String() + " ahead of this node's" + at
	case off < -slack:
		return (-off).Round(time.Second).String() + " behind this node's" + at
	}
	return "in step with this node's, within " + slack.Round(time.Millisecond).String() + at
}

// cosigners are the names on a signed note's signature lines but the log's
// own: the witnesses whose cosignatures it carries.
func cosigners(note []byte, origin string) []string {
	_, sigs, ok := bytes.Cut(note, []byte("\n\n"))
	if !ok {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(sigs), "\n") {
		rest, ok := strings.CutPrefix(line, "— ")
		name, _, _ := strings.Cut(rest, " ")
		if ok && name != origin && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}
