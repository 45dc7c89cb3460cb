package events

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/format"
)

// Type is the type member of every event; it is inside the signed bytes,
// so an event can never pass for a tree head, a label or a /check answer.
const Type = "histor.security-event/v1"

// Kinds of event this node records. HISTOR names its package-evidence
// events "package"; the others are this node's.
const (
	KindDefinitions  = "definitions"  // a server's tool definitions changed (a change record)
	KindSplitView    = "split-view"   // observers hold different tool sets of one server at once
	KindEquivocation = "equivocation" // two heads of one log that cannot be one tree
)

// TimeLayout is how an event writes observedAt: HISTOR's UTC seconds.
const TimeLayout = "2006-01-02T15:04:05Z"

// Fact is what one event says, before it is signed.
type Fact struct {
	// Target is what the event is about: a server id (16 hex characters)
	// for definitions and split views, a log origin for equivocation.
	Target     string
	ObservedAt time.Time
	Kind       string
	// Previous is the evidence the event replaces ({} when none); only its
	// digest is carried, as previousDigest.
	Previous any
	// Evidence is what was recorded: JSON-encodable, canonical-JSON-safe
	// (integers within ±2^53, no fractions).
	Evidence any
}

// Signer signs events as the node's log key: issuer is its did:key.
type Signer struct {
	Key ed25519.PrivateKey
	DID string
}

// Sign builds the event for f as HISTOR's append_event does: the body
// (type, issuer, target, observedAt, kind, previousDigest, evidence), its
// id the SHA-256 hex of the body's RFC 8785 bytes, then a signature by
// Ed25519 over the RFC 8785 bytes of body and id together. It returns the
// canonical bytes of the signed document and its id.
func (s Signer) Sign(f Fact) (doc []byte, id string, err error) {
	previous := f.Previous
	if previous == nil {
		previous = map[string]any{}
	}
	prev, err := canon.Marshal(previous)
	if err != nil {
		return nil, "", fmt.Errorf("canonicalising previous evidence: %w", err)
	}
	pd := sha256.Sum256(prev)
	body := map[string]any{
		"type": Type, "issuer": s.DID, "target": f.Target, "kind": f.Kind,
		"observedAt": f.ObservedAt.UTC().Format(TimeLayout), "previousDigest": hex.EncodeToString(pd[:]),
		"evidence": f.Evidence,
	}
	unsigned, err := canon.Marshal(body)
	if err != nil {
		return nil, "", fmt.Errorf("canonicalising event: %w", err)
	}
	sum := sha256.Sum256(unsigned)
	id = hex.EncodeToString(sum[:])
	body["id"] = id
	if doc, err = format.SignDocument(s.Key, s.DID, body); err != nil {
		return nil, "", fmt.Errorf("signing event: %w", err)
	}
	return doc, id, nil
}
