package peers

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble"

	"github.com/histor-observer/histor/log/canon"
)

const timeLayout = "2006-01-02T15:04:05Z" // HISTOR's: UTC, whole seconds

// Observer is one entry of observers[]: what one observer saw of a server, where its label
// sits in that observer's log, and everything needed to prove it again offline with the
// observer's did:key alone: its signed observation digest, the label (the log entry), the
// inclusion proof and the observer's signed head the proof is for.
type Observer struct {
	DID        string `json:"did"`
	Self       bool   `json:"self,omitempty"` // this node's own observation
	Endpoint   string `json:"endpoint,omitempty"`
	Package    string `json:"package,omitempty"`
	Digest     string `json:"digest,omitempty"` // set, or Status
	Status     string `json:"status,omitempty"`
	ObservedAt string `json:"observedAt"`
	LabelID    string `json:"labelId"`
	LeafIndex  uint64 `json:"leafIndex"`
	HeadSize   uint64 `json:"headSize"`
	// Observation is the signed observation digest (a signed note), for this node's own
	// observations; a mirrored one has none (its label in the log is the claim).
	Observation string `json:"observation,omitempty"`
	// Label is the label as the log holds it; its RFC 8785 bytes are the leaf.
	Label json.RawMessage `json:"label"`
	// InclusionProof is the RFC 9162 proof of LeafIndex under Head, hex.
	InclusionProof []string `json:"inclusionProof"`
	// Head is the observer's signed histor.sth/v1 head of size HeadSize, for this node's
	// own observations.
	Head json.RawMessage `json:"head,omitempty"`
	// Checkpoint is the observer's signed C2SP checkpoint of size HeadSize, as this node's
	// mirror of its log holds it, for a mirrored observation.
	Checkpoint string `json:"checkpoint,omitempty"`
}

// Agreement decides the agreement over the kept observations of server.
func (s *Store) Agreement(server string) Agreement { return agree(s.kept(server)) }

// Split reports whether the observers of server are in a split view, for
// /api/v1/servers?state=split.
func (s *Store) Split(server string) bool { return s.Agreement(server).Status == Split }

// SplitServers lists the server ids in a split view, sorted.
func (s *Store) SplitServers() []string {
	s.mu.RLock()
	ids := make([]string, 0, len(s.servers))
	for id := range s.servers {
		ids = append(ids, id)
	}
	s.mu.RUnlock()
	ids = slices.DeleteFunc(ids, func(id string) bool { return !s.Split(id) })
	slices.Sort(ids)
	return ids
}

// Observers returns the kept observations of server with their proofs, sorted by did:key;
// an empty slice (not nil) when there are none.
func (s *Store) Observers(server string) ([]Observer, error) {
	kept, out, err := s.readStored(server)
	if err != nil {
		return nil, err
	}
	for i, k := range kept {
		if k.Mirrored {
			if out[i], err = s.mirrored(k); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// readStored returns the kept observations of server and an entry for each, the stored ones
// filled in. They are read under the lock their summaries are: a write holds it from the
// moment Pebble's reads show its record (before its WAL sync returns) until the index
// follows, so a summary and the record read with it are one observation. The mirrored ones
// are left to Observers, which proves them without the lock (Prove takes the mirror's).
func (s *Store) readStored(server string) ([]summary, []Observer, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, nil, ErrClosed
	}
	kept := s.keptLocked(server)
	out := make([]Observer, len(kept))
	err := s.view.Read(func(r pebble.Reader) error {
		for i, k := range kept {
			if k.Mirrored {
				continue
			}
			o, err := s.stored(r, server, k)
			if err != nil {
				return err
			}
			out[i] = o
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return kept, out, nil
}

// stored reads from r the record of k, a stored observation of server; the caller holds mu.
func (s *Store) stored(r pebble.Reader, server string, k summary) (Observer, error) {
	v, closer, err := r.Get(recordKey(server, k.Observer))
	if errors.Is(err, pebble.ErrNotFound) {
		return Observer{}, fmt.Errorf("reading peer observation of %s by %s: not stored", server, k.Observer)
	}
	if err != nil {
		return Observer{}, fmt.Errorf("reading peer observation: %w", err)
	}
	defer closer.Close()
	var rec record
	if err := json.Unmarshal(v, &rec); err != nil {
		return Observer{}, fmt.Errorf("decoding peer observation: %w", err)
	}
	return Observer{
		DID: k.Observer, Self: k.Observer == s.cfg.Self, Endpoint: k.Endpoint, Package: k.Package,
		Digest: k.Digest, Status: k.Status, ObservedAt: k.ObservedAt.UTC().Format(timeLayout),
		LabelID: k.LabelID, LeafIndex: k.LeafIndex, HeadSize: k.HeadSize,
		Observation: rec.Observation, Label: rec.Label, InclusionProof: nonNil(rec.Proof), Head: json.RawMessage(rec.Head),
	}, nil
}

func (s *Store) mirrored(k summary) (Observer, error) {
	o := Observer{DID: k.Observer, Endpoint: k.Endpoint, Package: k.Package, Digest: k.Digest, Status: k.Status,
		ObservedAt: k.ObservedAt.UTC().Format(timeLayout), LabelID: k.LabelID, LeafIndex: k.LeafIndex, InclusionProof: []string{}}
	if s.cfg.Prove == nil {
		return Observer{}, fmt.Errorf("proving the mirrored observation of %s: no mirror", k.Observer)
	}
	p, err := s.cfg.Prove(k.Observer, k.LeafIndex)
	if err != nil {
		return Observer{}, fmt.Errorf("proving the mirrored observation of %s: %w", k.Observer, err)
	}
	o.Label, o.HeadSize, o.Checkpoint = p.Entry, p.Size, string(p.Checkpoint)
	for _, h := range p.Hashes {
		o.InclusionProof = append(o.InclusionProof, hex.EncodeToString(h[:]))
	}
	return o, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Members returns the two members /check and /api/v1/servers/<id> add for server,
// "observers" and "agreement", as values log/canon encodes (the signed /check answer is
// RFC 8785) and encoding/json encodes alike.
func (s *Store) Members(server string) (observers []any, agreement map[string]any, err error) {
	obs, err := s.Observers(server)
	if err != nil {
		return nil, nil, err
	}
	observers = make([]any, 0, len(obs))
	for _, o := range obs {
		m, err := o.member()
		if err != nil {
			return nil, nil, err
		}
		observers = append(observers, m)
	}
	return observers, s.Agreement(server).member(), nil
}

func (a Agreement) member() map[string]any {
	return map[string]any{"status": a.Status, "counts": map[string]any{
		"observers": a.Counts.Observers, "withDigest": a.Counts.WithDigest,
		"digests": a.Counts.Digests, "agreeing": a.Counts.Agreeing,
	}}
}

func (o Observer) member() (map[string]any, error) {
	label, err := canon.Parse(o.Label)
	if err != nil {
		return nil, fmt.Errorf("reading kept label %s: %w", o.LabelID, err)
	}
	proof := make([]any, len(o.InclusionProof))
	for i, h := range o.InclusionProof {
		proof[i] = h
	}
	m := map[string]any{
		"did": o.DID, "observedAt": o.ObservedAt, "labelId": o.LabelID,
		"leafIndex": int64(o.LeafIndex), "headSize": int64(o.HeadSize),
		"label": label, "inclusionProof": proof,
	}
	if len(o.Head) > 0 {
		head, err := canon.Parse(o.Head)
		if err != nil {
			return nil, fmt.Errorf("reading kept head of %s: %w", o.DID, err)
		}
		m["head"] = head
	}
	for k, v := range map[string]string{"observation": o.Observation, "checkpoint": o.Checkpoint} {
		if v != "" {
			m[k] = v
		}
	}
	for k, v := range map[string]string{"endpoint": o.Endpoint, "package": o.Package, "digest": o.Digest, "status": o.Status} {
		if v != "" {
			m[k] = v
		}
	}
	if o.Self {
		m["self"] = true
	}
	return m, nil
}
