package catalog

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/crawl/state"
)

// Evidence reads content-addressed evidence from the log; *log.Log
// satisfies it.
type Evidence interface {
	Evidence(kind, sri string) ([]byte, error)
}

// Options configure a Catalog.
type Options struct {
	// Store is the crawl state the catalog reads. Required.
	Store *state.Store
	// Log holds the evidence (tool sets, descriptors). Required.
	Log Evidence
	// Patterns is the pattern set the server pages' matches are re-derived
	// with; nil: no matches are reported (patternMatches is null).
	Patterns *scan.PatternSet
	// Now is the clock for "since" windows. Default time.Now.
	Now func() time.Time
	// Logger receives load failures. Default: discarded.
	Logger *slog.Logger
}

// Catalog is the in-memory read model. It is safe for concurrent use: reads
// take the current snapshot with one atomic load.
type Catalog struct {
	opt     Options
	snap    atomic.Pointer[snapshot]
	loadMu  sync.Mutex // serialises Reload
	matches matchCache
	// reports counts client reports per day (YYYY-MM-DD) over the last
	// reportDays days, rebuilt by Reload and bumped by AddClientReport;
	// guarded by reportMu.
	reportMu sync.Mutex
	reports  map[string]int64
}

// Server is one target as the catalog holds it: the registry target with
// its latest status, and its latest observation (the zero Observation when
// it was never attempted). A *Server from a snapshot is never modified.
type Server struct {
	state.Target
	Obs state.Observation
	// Observed says Obs is a stored observation.
	Observed bool
	// ChangeCount is the number of change records of the target (at least
	// Obs.Changes).
	ChangeCount int

	changeSeqs []int64             // the target's change ids, newest first
	memo       atomic.Pointer[any] // see Memo; set at most once
}

// Memo returns what derive makes of s, deriving it on first use and keeping
// it with s. A Server never changes and a Reload makes new ones, so a value
// derived from s alone is right for as long as s is served, and goes with
// its snapshot (the reading API keeps each server's encoded summary here).
// Readers racing on first use may each derive; the first result stored is
// the one every caller gets. There is one slot: every caller must pass the
// same derive.
func (s *Server) Memo(derive func(*Server) any) any {
	if v := s.memo.Load(); v != nil {
		return *v
	}
	v := derive(s)
	s.memo.CompareAndSwap(nil, &v)
	return *s.memo.Load()
}

// Pinned says the target has a current tool-set digest on record.
func (s *Server) Pinned() bool { return s.Obs.ToolSetDigest != "" }

// Flagged says the current subject's latest scan or name-threat labels had matches.
func (s *Server) Flagged() bool {
	return s.Obs.BlockMatches > 0 || s.Obs.AdviseMatches > 0 || s.Obs.RecordMatches > 0
}

// snapshot is one immutable load of the store.
type snapshot struct {
	// servers is every target, in the store's order (by id), which every
	// index below is built from.
	servers    []*Server
	byID       map[string]*Server
	byEndpoint map[string][]*Server
	byName     map[string][]*Server
	// listed holds the targets still listed, per State, in HISTOR's list
	// order (pinned first, most changes first, then name and endpoint).
	listed [stateCount]list
	// changeTimes are every change record's time, oldest first.
	changeTimes []time.Time
	// maxSeq is the highest change id loaded: Update reads the changes after it.
	maxSeq   int64
	counts   Counts
	hosts    []HostCount
	distinct int
	lastRun  *state.Run
	runs     int
	loadedAt time.Time
}

// New loads a catalog from o.Store.
func New(o Options) (*Catalog, error) {
	if o.Store == nil || o.Log == nil {
		return nil, errors.New("catalog: Store and Log are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Catalog{opt: o}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload rebuilds the snapshot from the whole store. Readers keep the
// previous snapshot until the new one is whole; on error the previous one
// stays. After a commit whose targets are known, Update costs less.
func (c *Catalog) Reload() error {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	s, reports, err := c.load()
	if err != nil {
		return fmt.Errorf("loading catalog: %w", err)
	}
	c.reportMu.Lock()
	c.reports = reports
	c.reportMu.Unlock()
	c.snap.Store(s)
	return nil
}

func (c *Catalog) load() (*snapshot, map[string]int64, error) {
	s, err := c.loadSnapshot()
	if err != nil {
		return nil, nil, err
	}
	reports, err := c.loadReports(s.servers)
	if err != nil {
		return nil, nil, err
	}
	return s, reports, nil
}

// loadSnapshot reads every target, observation, change and run.
func (c *Catalog) loadSnapshot() (*snapshot, error) {
	st := c.opt.Store
	servers, err := loadServers(st)
	if err != nil {
		return nil, err
	}
	s := &snapshot{servers: servers, byID: make(map[string]*Server, len(servers)), loadedAt: c.opt.Now()}
	for _, sv := range servers {
		s.byID[sv.ID] = sv
	}
	if err := s.loadChanges(st); err != nil {
		return nil, err
	}
	s.index()
	if err := s.loadRuns(st); err != nil {
		return nil, err
	}
	return s, nil
}

// loadServers joins targets and their observations.
func loadServers(st *state.Store) ([]*Server, error) {
	ts, err := st.Targets()
	if err != nil {
		return nil, err
	}
	obs, err := st.Observations()
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*state.Observation, len(obs))
	for i := range obs {
		byID[obs[i].TargetID] = &obs[i]
	}
	out := make([]*Server, len(ts))
	for i := range ts {
		sv := &Server{Target: ts[i]}
		if o := byID[ts[i].ID]; o != nil {
			sv.Obs, sv.Observed = *o, true
		}
		out[i] = sv
	}
	return out, nil
}

// loadChanges indexes every change record by target, newest first.
func (s *snapshot) loadChanges(st *state.Store) error {
	cs, err := st.Changes(0)
	if err != nil {
		return err
	}
	s.changeTimes = make([]time.Time, 0, len(cs))
	for _, ch := range cs {
		s.changeTimes = append(s.changeTimes, ch.At)
		s.maxSeq = max(s.maxSeq, ch.Seq)
		if sv := s.byID[ch.TargetID]; sv != nil && ch.Seq > 0 {
			sv.changeSeqs = append(sv.changeSeqs, ch.Seq)
		}
	}
	slices.SortFunc(s.changeTimes, func(a, b time.Time) int { return a.Compare(b) })
	for _, sv := range s.byID {
		slices.SortFunc(sv.changeSeqs, func(a, b int64) int { return int(b - a) })
		sv.ChangeCount = max(sv.Obs.Changes, len(sv.changeSeqs))
	}
	return nil
}

func (s *snapshot) loadRuns(st *state.Store) error {
	runs, err := st.Runs(0)
	if err != nil {
		return err
	}
	s.runs = len(runs)
	if len(runs) > 0 {
		s.lastRun = &runs[0]
	}
	return nil
}

func (c *Catalog) current() *snapshot { return c.snap.Load() }

// LoadedAt is when the current snapshot was loaded.
func (c *Catalog) LoadedAt() time.Time { return c.current().loadedAt }

// Len is the number of targets, delisted ones included.
func (c *Catalog) Len() int { return len(c.current().byID) }

// ByID returns the target with server id id, or nil.
func (c *Catalog) ByID(id string) *Server { return c.current().byID[id] }

// NormalizeEndpoint is the form endpoints are compared in: surrounding
// white space dropped and nothing else, as HISTOR keeps a registry URL
// (stripped) and compares a /check endpoint with it (exactly). The registry
// harvest stores endpoints in this form already.
func NormalizeEndpoint(endpoint string) string { return strings.TrimSpace(endpoint) }

// ByEndpoint returns every target at endpoint (normalised), listed ones
// first, then by name. The slice is shared: do not modify it.
func (c *Catalog) ByEndpoint(endpoint string) []*Server {
	return c.current().byEndpoint[NormalizeEndpoint(endpoint)]
}

// ByName returns every target of registry name name, listed ones first,
// then by endpoint. The slice is shared: do not modify it.
func (c *Catalog) ByName(name string) []*Server { return c.current().byName[name] }

// Lookup picks the target /check reports for an endpoint (or, when endpoint
// is "", a name): the first listed one, else the first delisted one, else
// nil — HISTOR's choice.
func (c *Catalog) Lookup(endpoint, name string) *Server {
	var cands []*Server
	if endpoint != "" {
		cands = c.ByEndpoint(endpoint)
	} else {
		cands = c.ByName(name)
	}
	if len(cands) == 0 {
		return nil
	}
	return cands[0] // listed ones sort first
}

// LabelTarget returns the id of the target label labelID was issued for,
// or "" when the crawl state does not know the label.
func (c *Catalog) LabelTarget(labelID string) (string, error) {
	id, err := c.opt.Store.LabelTarget(labelID)
	if errors.Is(err, state.ErrNotFound) {
		return "", nil
	}
	return id, err
}
