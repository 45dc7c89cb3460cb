package node

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/histor-observer/histor/crawl/state"
)

// CheckTargets is what /api/v1/check reads about the targets the crawl
// keeps. Implementations must be safe for concurrent use; the order of the
// targets returned does not matter (the handler orders them as HISTOR does).
type CheckTargets interface {
	// TargetsByEndpoint returns every target, delisted ones included, whose
	// endpoint is exactly endpoint (already trimmed of surrounding white
	// space, as the registry harvest trims endpoints).
	TargetsByEndpoint(endpoint string) ([]CheckTarget, error)
	// TargetsByName returns every target, delisted ones included, of the
	// registry server name.
	TargetsByName(name string) ([]CheckTarget, error)
	// SeenBefore reports when tool-set digest d was observed at target id:
	// the first and last ok observation with it and how many there were.
	// ok is false when it never was.
	SeenBefore(id, d string) (s SeenBefore, ok bool, err error)
}

// CheckTarget is one target as /check reports it.
type CheckTarget struct {
	ID, Name, Endpoint string
	// LastStatus is the status of the latest crawl attempt (ok, http-NNN,
	// timeout, …); "" before the first.
	LastStatus string
	Delisted   bool
	// LastListed is when the registry last listed the target (zero if
	// unknown); a delisted target's record stops there.
	LastListed time.Time
	// The current subject: "" and zero before the first ok observation.
	ToolSetDigest string // "" also when that set had no digest
	SubjectDigest string
	ToolCount     int
	// FirstPinned is when the first tool-set digest was observed;
	// UnchangedSince when the current subject was first seen; LastObserved
	// when it was last seen.
	FirstPinned, UnchangedSince, LastObserved time.Time
	// Observations counts ok observations, Changes change records.
	Observations, Changes int
}

// SeenBefore is HISTOR's seenBefore member: an earlier tool set of a target.
type SeenBefore struct {
	FirstSeen    time.Time
	LastSeen     time.Time
	Observations int
}

// StateTargets answers CheckTargets straight from the crawl's state store.
// Finding a target reads every target and observation record, so it costs
// time in proportion to the registry: correct, and meant to be replaced by
// an in-memory read model on a busy node.
type StateTargets struct{ Store *state.Store }

// TargetsByEndpoint implements CheckTargets.
func (s StateTargets) TargetsByEndpoint(endpoint string) ([]CheckTarget, error) {
	return s.find(func(t *state.Target) bool { return t.Endpoint == endpoint })
}

// TargetsByName implements CheckTargets.
func (s StateTargets) TargetsByName(name string) ([]CheckTarget, error) {
	return s.find(func(t *state.Target) bool { return t.Name == name })
}

func (s StateTargets) find(match func(*state.Target) bool) ([]CheckTarget, error) {
	ts, err := s.Store.Targets()
	if err != nil {
		return nil, fmt.Errorf("finding target: %w", err)
	}
	var out []CheckTarget
	for i := range ts {
		if !match(&ts[i]) {
			continue
		}
		o, err := s.Store.Observation(ts[i].ID)
		if err != nil && !errors.Is(err, state.ErrNotFound) {
			return nil, fmt.Errorf("reading observation of %s: %w", ts[i].ID, err)
		}
		out = append(out, checkTargetOf(&ts[i], o))
	}
	return out, nil
}

// checkTargetOf joins a target and its latest observation (nil if none).
// The state keeps no separate last-listed time: a delisted target is no
// longer crawled, so its last crawl is the last time it was listed.
func checkTargetOf(t *state.Target, o *state.Observation) CheckTarget {
	ct := CheckTarget{
		ID: t.ID, Name: t.Name, Endpoint: t.Endpoint, LastStatus: t.Status,
		Delisted: t.Delisted, LastListed: t.LastCrawled,
	}
	if o == nil {
		return ct
	}
	ct.ToolSetDigest, ct.SubjectDigest, ct.ToolCount = o.ToolSetDigest, o.Subject, o.ToolCount
	ct.FirstPinned, ct.UnchangedSince, ct.LastObserved = o.FirstPinned, o.UnchangedSince, o.LastOK
	ct.Observations, ct.Changes = o.OKObservations, o.Changes
	if ct.SubjectDigest == "" {
		ct.ToolCount = 0 // the count of a failed attempt is no observed set
	}
	return ct
}

// SeenBefore implements CheckTargets over the target's timeline: each span
// is a run of attempts that ended alike, so the ok spans with digest d hold
// every observation of it.
func (s StateTargets) SeenBefore(id, d string) (SeenBefore, bool, error) {
	spans, err := s.Store.Spans(id)
	if err != nil {
		return SeenBefore{}, false, fmt.Errorf("reading timeline of %s: %w", id, err)
	}
	var sb SeenBefore
	for _, sp := range spans {
		if sp.Status != "ok" || sp.ToolSetDigest != d || sp.Count < 1 {
			continue
		}
		if sb.Observations == 0 || sp.From.Before(sb.FirstSeen) {
			sb.FirstSeen = sp.From
		}
		if sp.Until.After(sb.LastSeen) {
			sb.LastSeen = sp.Until
		}
		sb.Observations += sp.Count
	}
	return sb, sb.Observations > 0, nil
}

// normalEndpoint is the form of a queried endpoint that is looked up: the
// registry harvest trims white space around a remote's URL before keeping
// it (HISTOR's does too), so the query is trimmed the same way.
func normalEndpoint(s string) string { return strings.TrimSpace(s) }
