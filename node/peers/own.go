package peers

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/gossip/wire"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
)

// StatusNoDigest is the status of an observation that read a tool list MTL/1 could not
// digest (the refusal code is in the label).
const StatusNoDigest = "no-digest"

// OwnLog is what Own reads from this node's log; *log.Log has these methods.
type OwnLog interface {
	Latest() hlog.Head
	InclusionProof(index, size uint64) ([][32]byte, error)
	Entry(index uint64) ([]byte, error)
}

// OwnState is what Own reads from the crawl state; *state.Store has these methods.
type OwnState interface {
	Targets() ([]state.Target, error)
	Target(id string) (*state.Target, error)
	Observation(id string) (*state.Observation, error)
	Labels(id string) ([]state.LabelRef, error)
	PackageRun(id string) (*state.PackageRun, error)
}

// Own builds this observer's observation digest of every target its crawl state holds, each
// signed with the log key under origin and proven under the log's latest head: the messages
// the node publishes after each crawl (gossip's PublishObservation takes Proven.Observation)
// and feeds to its own Store. A target with a tool-set digest is reported with its current
// observation label; one whose latest attempt read none, with its status and its latest
// label; a target with no label yet, or that was delisted, is left out.
func Own(st OwnState, lg OwnLog, origin string, key ed25519.PrivateKey) ([]Proven, error) {
	targets, err := st.Targets()
	if err != nil {
		return nil, fmt.Errorf("listing targets for our observations: %w", err)
	}
	return ownOf(st, lg, targets, origin, key)
}

// OwnOf is Own for the targets ids alone, each read by its id (one the state
// does not hold is left out): what the node publishes of the targets a crawl
// or a sandbox run changed.
func OwnOf(st OwnState, lg OwnLog, ids []string, origin string, key ed25519.PrivateKey) ([]Proven, error) {
	targets := make([]state.Target, 0, len(ids))
	for _, id := range ids {
		t, err := st.Target(id)
		if errors.Is(err, state.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading target %s for our observation: %w", id, err)
		}
		targets = append(targets, *t)
	}
	return ownOf(st, lg, targets, origin, key)
}

// ownOf is Own for targets.
func ownOf(st OwnState, lg OwnLog, targets []state.Target, origin string, key ed25519.PrivateKey) ([]Proven, error) {
	head := lg.Latest()
	if head.Size == 0 {
		return nil, nil
	}
	did := awr.DIDKey(key.Public().(ed25519.PublicKey))
	var out []Proven
	for _, t := range targets {
		p, err := own(st, lg, head, t, did, origin, key)
		if err != nil {
			return out, fmt.Errorf("our observation of %s: %w", t.ID, err)
		}
		if p != nil {
			out = append(out, *p)
		}
	}
	return out, nil
}

func own(st OwnState, lg OwnLog, head hlog.Head, t state.Target, did, origin string, key ed25519.PrivateKey) (*Proven, error) {
	if t.Delisted || t.Skip != "" {
		return nil, nil
	}
	obs, err := st.Observation(t.ID)
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ref, err := ownLabel(st, t.ID, obs)
	if err != nil || ref == nil || ref.LeafIndex >= head.Size {
		return nil, err
	}
	entry, err := lg.Entry(ref.LeafIndex)
	if err != nil {
		return nil, fmt.Errorf("reading label %s: %w", ref.ID, err)
	}
	o, err := ownObservation(obs, ref, entry)
	if err != nil {
		return nil, err
	}
	o.Observer, o.Server, o.Endpoint, o.TreeSize = did, t.ID, t.Endpoint, head.Size
	if t.Sandboxed() {
		// The version the labels are of: the latest run that said something
		// of the package, committed with them (the target's listed version
		// may already be a newer one).
		run, err := st.PackageRun(t.ID)
		switch {
		case err == nil && run.Package != "" && !run.Status.Infrastructure():
			o.Endpoint, o.Package = "", run.Package
		case err != nil && !errors.Is(err, state.ErrNotFound):
			return nil, fmt.Errorf("reading the package run: %w", err)
		}
	}
	return sign(o, entry, head, lg, origin, key)
}

// ownLabel is the label an observation of the target cites: the current observation label
// when the latest attempt has a digest, else the target's latest label; nil when none.
func ownLabel(st OwnState, id string, obs *state.Observation) (*state.LabelRef, error) {
	refs, err := st.Labels(id)
	if err != nil {
		return nil, fmt.Errorf("listing labels: %w", err)
	}
	if len(refs) == 0 {
		return nil, nil
	}
	if hasDigest(obs) {
		want := obs.Labels[awr.MethodObservation]
		for i := len(refs) - 1; i >= 0; i-- {
			if refs[i].ID == want {
				return &refs[i], nil
			}
		}
	}
	return &refs[len(refs)-1], nil
}

func hasDigest(obs *state.Observation) bool {
	return obs.Status == mcpclient.StatusOK && obs.ToolSetDigest != "" && obs.Labels[awr.MethodObservation] != ""
}

// ownObservation says what the label says, where it says it: the digest and observedAt of
// an observation label are read from the label itself, so they match by construction.
func ownObservation(obs *state.Observation, ref *state.LabelRef, entry []byte) (wire.Observation, error) {
	doc, err := canon.Parse(entry)
	m, ok := doc.(map[string]any)
	if err != nil || !ok {
		return wire.Observation{}, fmt.Errorf("reading label %s: not a JSON object", ref.ID)
	}
	d := labelDetail(m)
	o := wire.Observation{LabelID: ref.ID, LeafIndex: ref.LeafIndex}
	if hasDigest(obs) && d.digest == obs.ToolSetDigest {
		o.Digest, o.ObservedAt = d.digest, d.observed
		return o, nil
	}
	o.Status, o.ObservedAt = statusWord(obs), obs.ObservedAt.UTC().Truncate(time.Second)
	return o, nil
}

// statusWord is the crawl status as an observation digest spells it: a lowercase word.
func statusWord(obs *state.Observation) string {
	if obs.Status == mcpclient.StatusOK {
		return StatusNoDigest
	}
	s := strings.ToLower(obs.Status)
	if s == "" || len(s) > 32 || strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" || s[0] < 'a' || s[0] > 'z' {
		return "other"
	}
	return s
}

func sign(o wire.Observation, entry []byte, head hlog.Head, lg OwnLog, origin string, key ed25519.PrivateKey) (*Proven, error) {
	msg, err := wire.SignObservation(origin, key, o)
	if err != nil {
		return nil, err
	}
	proof, err := lg.InclusionProof(o.LeafIndex, head.Size)
	if err != nil {
		return nil, fmt.Errorf("proving label %s: %w", o.LabelID, err)
	}
	return &Proven{Observation: msg, Label: entry, Proof: proof, Head: head.STH}, nil
}
