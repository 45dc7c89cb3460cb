package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/node/events"
)

// maxDerivedChanges bounds the change records one derivation pass reads;
// the next pass goes on where it stopped.
const maxDerivedChanges = 1000

// Meta names of the part's own records in the event store.
const (
	metaChangeCursor = "derive/changes" // the highest change seq turned into an event
	metaSplitPrefix  = "derive/split/"  // derive/split/<server id>: the split last reported
	metaWebhooks     = "webhook/"       // the webhook deliveries' records (webhooks.go)
)

func (p *Part) append(f events.Fact) error {
	doc, id, err := p.signer.Sign(f)
	if err != nil {
		return err
	}
	c, fresh, err := p.store.Append(doc, id, f.Target)
	if err != nil {
		return fmt.Errorf("appending a %s event: %w", f.Kind, err)
	}
	if fresh {
		p.logger.Info("security event", "cursor", c, "kind", f.Kind, "target", f.Target)
	}
	return nil
}

// deriveChanges turns each change record after the cursor into a
// definitions event, in change order, and moves the cursor past it.
func (p *Part) deriveChanges() error {
	if p.src.Changes == nil {
		return nil
	}
	var last int64
	if err := p.store.Meta(metaChangeCursor, &last); err != nil && !errors.Is(err, events.ErrNotFound) {
		return fmt.Errorf("reading the change cursor: %w", err)
	}
	for range maxDerivedChanges {
		ch, err := p.src.Changes.ChangeBySeq(last + 1)
		if errors.Is(err, state.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading change %d: %w", last+1, err)
		}
		if err := p.append(changeFact(ch)); err != nil {
			return err
		}
		last = ch.Seq
		if err := p.store.SetMeta(metaChangeCursor, last); err != nil {
			return fmt.Errorf("moving the change cursor to %d: %w", last, err)
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
func (p *Part) deriveSplits() error {
	if p.src.Splits == nil {
		return nil
	}
	pv := p.src.Splits.SplitView()
	if pv == nil {
		return nil
	}
	split := pv.SplitServers()
	var errs []error
	for _, id := range split {
		errs = append(errs, p.deriveSplit(pv, id))
	}
	errs = append(errs, p.store.EachMeta(metaSplitPrefix, func(name string, _ []byte) error {
		if id := name[len(metaSplitPrefix):]; !slices.Contains(split, id) {
			return p.store.DeleteMeta(name)
		}
		return nil
	}))
	return errors.Join(errs...)
}

func (p *Part) deriveSplit(pv SplitView, id string) error {
	sp, err := pv.Split(id)
	if err != nil {
		return fmt.Errorf("reading the peer view of %s: %w", id, err)
	}
	cur := splitRecord{Seen: []splitSeen{}}
	var observers []any
	latest, endpoint := "", ""
	for _, o := range sp.Observers {
		cur.Seen = append(cur.Seen, splitSeen{o.DID, o.Digest, o.Status})
		observers = append(observers, map[string]any{"did": o.DID, "digest": orNull(o.Digest), "status": orNull(o.Status),
			"observedAt": o.ObservedAt, "labelId": o.LabelID, "leafIndex": int64(o.LeafIndex), "headSize": int64(o.HeadSize)})
		latest, endpoint = max(latest, o.ObservedAt), o.Endpoint
	}
	var prev splitRecord
	err = p.store.Meta(metaSplitPrefix+id, &prev)
	switch {
	case err == nil && slices.Equal(prev.Seen, cur.Seen):
		return nil
	case err != nil && !errors.Is(err, events.ErrNotFound):
		return fmt.Errorf("reading the split last reported of %s: %w", id, err)
	}
	at, _ := time.Parse(time.RFC3339, latest)
	var previous any = map[string]any{}
	if prev.Seen != nil {
		previous = prev
	}
	ev := map[string]any{"observers": observers, "agreement": sp.Agreement,
		"digests": int64(sp.Digests), "endpoint": orNull(endpoint),
		"url": "/api/v1/servers/" + id}
	if err := p.append(events.Fact{Target: id, ObservedAt: at, Kind: events.KindSplitView, Previous: previous, Evidence: ev}); err != nil {
		return err
	}
	if err := p.store.SetMeta(metaSplitPrefix+id, cur); err != nil {
		return fmt.Errorf("recording the split of %s: %w", id, err)
	}
	return nil
}

// deriveEvidence reports each equivocation bundle the witness holds. An
// event's id is its body's digest, so a bundle reported before appends
// nothing; derived spares the signing within one run.
func (p *Part) deriveEvidence() error {
	if p.src.Evidence == nil {
		return nil
	}
	list, err := p.src.Evidence.ListEvidence()
	if err != nil {
		return fmt.Errorf("listing evidence: %w", err)
	}
	for _, e := range list {
		if p.derived[e.ID] {
			continue
		}
		if err := p.append(evidenceFact(e)); err != nil {
			return err
		}
		p.derived[e.ID] = true
	}
	return nil
}

func evidenceFact(e EvidenceItem) events.Fact {
	return events.Fact{
		Target: e.Origin, ObservedAt: e.Seen, Kind: events.KindEquivocation,
		Evidence: map[string]any{"evidenceId": e.ID, "origin": e.Origin, "kind": e.Kind,
			"url": "/api/v1/evidence/" + e.ID, "bundleSha256": sha256Hex(e.Bundle)},
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
