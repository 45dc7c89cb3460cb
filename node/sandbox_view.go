package node

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/sandbox"
)

// packageView reads the sandbox's runs for the API: the signed behaviour
// census and the package member of a server's page. It needs no open
// sandbox part: a node that runs none still counts its packages, all
// unobserved.
type packageView struct {
	st      *state.Store
	curated *registry.Curated
	key     ed25519.PrivateKey
	did     string
	now     func() time.Time
}

// census is the signed histor.behaviour-census/v1 over every package
// target, as HISTOR's `histor census` writes it.
func (v *packageView) census() ([]byte, error) {
	ts, err := packageTargets(v.st, v.curated)
	if err != nil {
		return nil, err
	}
	rows := make([]sandbox.CensusRow, 0, len(ts))
	for _, t := range ts {
		row := sandbox.CensusRow{Package: t.Endpoint}
		run, err := v.st.PackageRun(t.ID)
		switch {
		case err == nil:
			row.Version, row.Observation, row.EvidenceSHA256 = run.Version, run.Summary, run.BehaviourSHA256
			if run.Status == sandbox.StatusOK {
				row.LastObserved = run.ObservedAt
			}
		case !errors.Is(err, state.ErrNotFound):
			return nil, fmt.Errorf("reading package run of %s: %w", t.ID, err)
		}
		rows = append(rows, row)
	}
	body, err := sandbox.Census(rows, v.did, v.now())
	if err != nil {
		return nil, err
	}
	return format.SignDocument(v.key, v.did, body)
}

// Census is the node's signed behaviour census. The node must be open.
func (n *Node) Census() ([]byte, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.state == nil {
		return nil, errors.New("census: node not open")
	}
	return n.packageView().census()
}

func (n *Node) packageView() *packageView {
	return &packageView{st: n.state, curated: n.cfg.Crawl.Curated, key: n.id.logKey, did: n.id.did, now: n.now}
}

// serveCensus answers GET /api/v1/census.
func (a *api) serveCensus(w http.ResponseWriter, r *http.Request) {
	if a.packages == nil {
		a.fail(w, http.StatusServiceUnavailable, "this node serves no crawl state")
		return
	}
	doc, err := a.packages.census()
	if err != nil {
		a.internal(w, r, "building census", err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeBody(w, "application/json", doc)
}

// packageMember is a package server's sandbox runs on its page: the last
// run and every version observed. A record of what happened, never a
// verdict.
type packageMember struct {
	Key      string          `json:"key"` // npm:<name> or pypi:<name>
	LastRun  *packageRunView `json:"lastRun"`
	Versions []versionRow    `json:"versions"`
}

type packageRunView struct {
	Package      string                `json:"package"`
	Version      string                `json:"version"`
	Status       string                `json:"status"`
	Detail       *string               `json:"detail"`
	ObservedAt   string                `json:"observedAt"`
	Seconds      float64               `json:"seconds"`
	Runtime      sandbox.Runtime       `json:"runtime"`
	Calls        callsView             `json:"calls"`
	Complete     bool                  `json:"complete"`
	Behaviour    *string               `json:"behaviour"`    // SRI of the behaviour record
	BehaviourURL *string               `json:"behaviourUrl"` // where it is served
	VersionFacts *sandbox.VersionFacts `json:"versionFacts"`
	Signals      []string              `json:"signals"`
}

// callsView is the canary calls' coverage, without the per-tool outcomes
// (those are in the behaviour record).
type callsView struct {
	Total      int  `json:"total"`
	Attempted  int  `json:"attempted"`
	Successful int  `json:"successful"`
	Errors     int  `json:"errors"`
	Timeouts   int  `json:"timeouts"`
	Skipped    int  `json:"skipped"`
	Complete   bool `json:"complete"`
}

type versionRow struct {
	Version    string `json:"version"`
	Status     string `json:"status"`
	ObservedAt string `json:"observedAt"`
}

// maxVersionRows bounds the versions a page lists.
const maxVersionRows = 100

// member is s's package member; nil for a server that is not a package.
func (v *packageView) member(s *catalog.Server) (*packageMember, error) {
	if s.Transport != registry.TransportStdio {
		return nil, nil
	}
	m := &packageMember{Key: s.Endpoint, Versions: []versionRow{}}
	run, err := v.st.PackageRun(s.ID)
	switch {
	case err == nil:
		m.LastRun = runView(run)
	case !errors.Is(err, state.ErrNotFound):
		return nil, fmt.Errorf("reading package run of %s: %w", s.ID, err)
	}
	vs, err := v.st.PackageVersions(s.ID, maxVersionRows)
	if err != nil {
		return nil, fmt.Errorf("reading package versions of %s: %w", s.ID, err)
	}
	for _, r := range vs {
		m.Versions = append(m.Versions, versionRow{Version: r.Version, Status: string(r.Status), ObservedAt: catalog.FormatTime(r.ObservedAt)})
	}
	return m, nil
}

func runView(r *state.PackageRun) *packageRunView {
	c := r.Calls
	pv := &packageRunView{
		Package: r.Package, Version: r.Version, Status: string(r.Status), Detail: nullStr(r.Detail),
		ObservedAt: catalog.FormatTime(r.ObservedAt), Seconds: r.Seconds, Runtime: r.Runtime,
		Calls: callsView{Total: c.Total, Attempted: c.Attempted, Successful: c.Successful, Errors: c.Errors,
			Timeouts: c.Timeouts, Skipped: c.Skipped, Complete: c.Complete},
		Complete: r.Complete, Behaviour: nullStr(r.Behaviour), VersionFacts: r.Facts, Signals: []string{},
	}
	if r.Behaviour != "" {
		u := "/api/v1/behaviour/" + r.Behaviour
		pv.BehaviourURL = &u
	}
	if r.Facts != nil && r.Facts.Signals != nil {
		pv.Signals = r.Facts.Signals
	}
	return pv
}
