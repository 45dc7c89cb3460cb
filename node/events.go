package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/node/events"
	"github.com/histor-observer/histor/node/peers"
	"github.com/histor-observer/histor/witness"
)

// DefaultEventsInterval is how often the node looks for new facts to turn
// into security events when Config.EventsInterval is zero.
const DefaultEventsInterval = 30 * time.Second

// maxDerivedChanges bounds the change records one derivation pass reads;
// the next pass goes on where it stopped.
const maxDerivedChanges = 1000

// Meta names of the derivation's own records in the event store.
const (
	metaChangeCursor = "derive/changes" // the highest change seq turned into an event
	metaSplitPrefix  = "derive/split/"  // derive/split/<server id>: the split last reported
	metaWebhooks     = "webhook/"       // the webhook deliveries' records (webhook.go)
)

// EventsDir is where the node keeps its security events (and the webhook
// deliveries' state): DataDir/events.
func (n *Node) EventsDir() string { return filepath.Join(n.cfg.DataDir, "events") }

// eventParts is the event store and the loop that derives events from the
// facts the other parts record. The derivation is a poller over those
// stores rather than hooks inside them: the change records, the peer view
// and the witness's evidence store each stay unaware of events, every
// event can be derived again from its fact after a crash, and a pass is
// cheap (a cursor for changes, the split set, the evidence list).
type eventParts struct {
	store   *events.Store
	signer  events.Signer
	st      *state.Store
	fed     *federation
	logger  *slog.Logger
	every   time.Duration
	wake    chan struct{}
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	derived map[string]bool // evidence ids already turned into events; derive goroutine only
}

func (n *Node) openEvents(ctx context.Context) error {
	s, err := events.Open(n.EventsDir())
	if err != nil {
		return err
	}
	ep := &eventParts{
		store: s, signer: events.Signer{Key: n.id.logKey, DID: n.id.did}, st: n.state, fed: n.fed,
		logger: n.cfg.Logger, every: n.cfg.EventsInterval, wake: make(chan struct{}, 1), derived: map[string]bool{},
	}
	if ep.every == 0 {
		ep.every = DefaultEventsInterval
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ep.cancel = cancel
	ep.wg.Go(func() { ep.loop(lctx) })
	n.events = ep
	return nil
}

func (n *Node) closeEvents() error {
	ep := n.events
	ep.cancel()
	ep.wg.Wait()
	n.events = nil
	return ep.store.Close()
}

// kick asks for a derivation pass now (after a crawl committed changes).
func (ep *eventParts) kick() { signal(ep.wake) }

func (ep *eventParts) loop(ctx context.Context) {
	t := time.NewTicker(ep.every)
	defer t.Stop()
	for {
		if err := ep.derive(); err != nil {
			ep.logger.Error("deriving security events", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-ep.wake:
		}
	}
}

// derive runs one pass over the three kinds of fact.
func (ep *eventParts) derive() error {
	return errors.Join(ep.deriveChanges(), ep.deriveSplits(), ep.deriveEvidence())
}

func (ep *eventParts) append(f events.Fact) error {
	doc, id, err := ep.signer.Sign(f)
	if err != nil {
		return err
	}
	c, fresh, err := ep.store.Append(doc, id, f.Target)
	if err == nil && fresh {
		ep.logger.Info("security event", "cursor", c, "kind", f.Kind, "target", f.Target)
	}
	return err
}

// deriveChanges turns each change record after the cursor into a
// definitions event, in change order, and moves the cursor past it.
func (ep *eventParts) deriveChanges() error {
	var last int64
	if err := ep.store.Meta(metaChangeCursor, &last); err != nil && !errors.Is(err, events.ErrNotFound) {
		return err
	}
	for range maxDerivedChanges {
		ch, err := ep.st.ChangeBySeq(last + 1)
		if errors.Is(err, state.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading change %d: %w", last+1, err)
		}
		if err := ep.append(changeFact(ch)); err != nil {
			return err
		}
		last = ch.Seq
		if err := ep.store.SetMeta(metaChangeCursor, last); err != nil {
			return err
		}
	}
	return nil
}

// changeFact is a change record as an event: the digests before as the
// previous evidence, the digests after and the change's summary as the
// evidence.
func changeFact(ch *state.Change) events.Fact {
	ev := map[string]any{
		"changeId": ch.Seq, "name": ch.Name, "endpoint": ch.Endpoint,
		"subjectDigest": orNull(ch.ToSubject), "toolSetDigest": orNull(ch.After), "labelId": orNull(ch.LabelID),
		"url": fmt.Sprintf("/api/v1/changes/%d", ch.Seq),
	}
	// The summary goes in only if it is JSON the canonical form can carry.
	var summary any
	if c, err := canon.Canonicalize(ch.Summary); err == nil && json.Unmarshal(c, &summary) == nil {
		ev["summary"] = summary
	}
	return events.Fact{
		Target: ch.TargetID, ObservedAt: ch.At, Kind: events.KindDefinitions,
		Previous: map[string]any{"subjectDigest": orNull(ch.FromSubject), "toolSetDigest": orNull(ch.Before)},
		Evidence: ev,
	}
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// splitRecord is the split last reported for a server.
type splitRecord struct {
	Seen []splitSeen `json:"seen"`
}

// splitSeen is what one observer holds of a split server: the part of the
// evidence that makes it a different split (observedAt moves with every
// crawl and is left out, as HISTOR leaves it out of its comparison).
type splitSeen struct {
	DID    string `json:"did"`
	Digest string `json:"digest,omitempty"`
	Status string `json:"status,omitempty"`
}

// deriveSplits reports each server whose observers newly hold different
// tool sets, or hold another combination of them than last reported, and
// forgets a split once the observers agree, so a new one is reported.
func (ep *eventParts) deriveSplits() error {
	pv := ep.fed.peers.Load()
	if pv == nil {
		return nil
	}
	split := pv.SplitServers()
	var errs []error
	for _, id := range split {
		errs = append(errs, ep.deriveSplit(pv, id))
	}
	errs = append(errs, ep.store.EachMeta(metaSplitPrefix, func(name string, _ []byte) error {
		if id := name[len(metaSplitPrefix):]; !slices.Contains(split, id) {
			return ep.store.DeleteMeta(name)
		}
		return nil
	}))
	return errors.Join(errs...)
}

func (ep *eventParts) deriveSplit(pv *peers.Store, id string) error {
	obs, err := pv.Observers(id)
	if err != nil {
		return fmt.Errorf("reading the peer view of %s: %w", id, err)
	}
	cur := splitRecord{Seen: []splitSeen{}}
	var observers []any
	latest, endpoint := "", ""
	for _, o := range obs {
		cur.Seen = append(cur.Seen, splitSeen{o.DID, o.Digest, o.Status})
		observers = append(observers, map[string]any{"did": o.DID, "digest": orNull(o.Digest), "status": orNull(o.Status),
			"observedAt": o.ObservedAt, "labelId": o.LabelID, "leafIndex": int64(o.LeafIndex), "headSize": int64(o.HeadSize)})
		latest, endpoint = max(latest, o.ObservedAt), o.Endpoint
	}
	var prev splitRecord
	err = ep.store.Meta(metaSplitPrefix+id, &prev)
	switch {
	case err == nil && slices.Equal(prev.Seen, cur.Seen):
		return nil
	case err != nil && !errors.Is(err, events.ErrNotFound):
		return err
	}
	at, _ := time.Parse(time.RFC3339, latest)
	var previous any = map[string]any{}
	if prev.Seen != nil {
		previous = prev
	}
	ev := map[string]any{"observers": observers, "agreement": pv.Agreement(id).Status,
		"digests": int64(pv.Agreement(id).Counts.Digests), "endpoint": orNull(endpoint),
		"url": "/api/v1/servers/" + id}
	if err := ep.append(events.Fact{Target: id, ObservedAt: at, Kind: events.KindSplitView, Previous: previous, Evidence: ev}); err != nil {
		return err
	}
	return ep.store.SetMeta(metaSplitPrefix+id, cur)
}

// deriveEvidence reports each equivocation bundle the witness holds. An
// event's id is its body's digest, so a bundle reported before appends
// nothing; derived spares the signing within one run.
func (ep *eventParts) deriveEvidence() error {
	w := ep.fed.wit
	if w == nil {
		return nil
	}
	list, err := w.ListEvidence()
	if err != nil {
		return fmt.Errorf("listing evidence: %w", err)
	}
	for _, e := range list {
		if ep.derived[e.ID] {
			continue
		}
		if err := ep.append(evidenceFact(e)); err != nil {
			return err
		}
		ep.derived[e.ID] = true
	}
	return nil
}

func evidenceFact(e witness.Evidence) events.Fact {
	return events.Fact{
		Target: e.Origin, ObservedAt: e.Seen, Kind: events.KindEquivocation,
		Evidence: map[string]any{"evidenceId": e.ID, "origin": e.Origin, "kind": e.Kind.String(),
			"url": "/api/v1/evidence/" + e.ID, "bundleSha256": sha256Hex(e.Bundle)},
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
