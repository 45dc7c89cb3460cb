package check

import (
	"time"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/node/catalog"
)

// ClientReports keeps what contribute:true adds: one more count of
// (target, tool-set digest, UTC day), nothing about the caller.
// *state.Store satisfies it.
type ClientReports interface {
	AddClientReport(target, digest, day string) error
}

// Targets is what /api/v1/check reads about the targets the crawl
// keeps. Implementations must be safe for concurrent use; the order of the
// targets returned does not matter (the handler orders them as HISTOR does).
type Targets interface {
	// TargetsByEndpoint returns every target, delisted ones included, whose
	// endpoint is exactly endpoint (already trimmed of surrounding white
	// space, as the registry harvest trims endpoints).
	TargetsByEndpoint(endpoint string) ([]Target, error)
	// TargetsByName returns every target, delisted ones included, of the
	// registry server name.
	TargetsByName(name string) ([]Target, error)
	// SeenBefore reports when tool-set digest d was observed at target id:
	// the first and last ok observation with it and how many there were.
	// ok is false when it never was.
	SeenBefore(id, d string) (s SeenBefore, ok bool, err error)
}

// Target is one target as /check reports it.
type Target struct {
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

// targetOf joins a target and its latest observation (nil if none).
// The state keeps no separate last-listed time: a delisted target is no
// longer crawled, so its last crawl is the last time it was listed.
func targetOf(t *state.Target, o *state.Observation) Target {
	ct := Target{
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

// CatalogTargets answers Targets from the node's catalog: in-memory
// lookups of the crawl state as of the last crawl.
type CatalogTargets struct{ Catalog *catalog.Catalog }

// TargetsByEndpoint is the catalog's targets at endpoint.
func (ct CatalogTargets) TargetsByEndpoint(endpoint string) ([]Target, error) {
	return targetsOf(ct.Catalog.ByEndpoint(endpoint)), nil
}

// TargetsByName is the catalog's targets of the registry name.
func (ct CatalogTargets) TargetsByName(name string) ([]Target, error) {
	return targetsOf(ct.Catalog.ByName(name)), nil
}

// SeenBefore is the catalog's record of digest d at target id.
func (ct CatalogTargets) SeenBefore(id, d string) (SeenBefore, bool, error) {
	s, err := ct.Catalog.ToolSetSeen(id, d)
	if err != nil || s == nil {
		return SeenBefore{}, false, err
	}
	return SeenBefore{FirstSeen: s.FirstSeen, LastSeen: s.LastSeen, Observations: s.Observations}, true, nil
}

func targetsOf(ss []*catalog.Server) []Target {
	out := make([]Target, 0, len(ss))
	for _, s := range ss {
		var o *state.Observation
		if s.Observed {
			o = &s.Obs
		}
		ct := targetOf(&s.Target, o)
		ct.Changes = max(ct.Changes, s.ChangeCount)
		out = append(out, ct)
	}
	return out
}

// CatalogReports counts a contribution in the store and at once in the
// catalog's figures; the catalog dates it by its own clock.
type CatalogReports struct{ Catalog *catalog.Catalog }

// AddClientReport counts one contribution; the day is the catalog's.
func (cr CatalogReports) AddClientReport(target, digest, _ string) error {
	return cr.Catalog.AddClientReport(target, digest)
}
