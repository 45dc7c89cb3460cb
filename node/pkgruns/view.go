package pkgruns

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/sandbox"
)

// View reads the sandbox's runs for the API: the signed behaviour census
// and the package member of a server's page. It needs no open Part: a node
// that runs none still counts its packages, all unobserved.
type View struct {
	st      RunReader
	curated *registry.Curated
	key     ed25519.PrivateKey
	did     string
	now     func() time.Time
}

// ViewConfig is what a View reads and signs with.
type ViewConfig struct {
	Runs RunReader
	// Curated is the curated list whose packages the census counts besides
	// the registry's; nil: the registry's packages only.
	Curated *registry.Curated
	// Key and DID sign the census (the node's log key and its did:key).
	Key ed25519.PrivateKey
	DID string
	Now func() time.Time
}

// NewView is the view of c.
func NewView(c ViewConfig) *View {
	return &View{st: c.Runs, curated: c.Curated, key: c.Key, did: c.DID, now: c.Now}
}

// Census is the signed histor.behaviour-census/v1 over every package
// target, as HISTOR's `histor census` writes it.
func (v *View) Census() ([]byte, error) {
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

// Member is a package server's sandbox runs on its page: the last run and
// every version observed. A record of what happened, never a verdict.
type Member struct {
	Key      string       `json:"key"` // npm:<name> or pypi:<name>
	LastRun  *RunView     `json:"lastRun"`
	Versions []VersionRow `json:"versions"`
}

// RunView is one run as a server's page shows it.
type RunView struct {
	Package      string                `json:"package"`
	Version      string                `json:"version"`
	Status       string                `json:"status"`
	Detail       *string               `json:"detail"`
	ObservedAt   string                `json:"observedAt"`
	Seconds      float64               `json:"seconds"`
	Runtime      sandbox.Runtime       `json:"runtime"`
	Calls        CallsView             `json:"calls"`
	Complete     bool                  `json:"complete"`
	Behaviour    *string               `json:"behaviour"`    // SRI of the behaviour record
	BehaviourURL *string               `json:"behaviourUrl"` // where it is served
	VersionFacts *sandbox.VersionFacts `json:"versionFacts"`
	Signals      []string              `json:"signals"`
}

// CallsView is the canary calls' coverage, without the per-tool outcomes
// (those are in the behaviour record).
type CallsView struct {
	Total      int  `json:"total"`
	Attempted  int  `json:"attempted"`
	Successful int  `json:"successful"`
	Errors     int  `json:"errors"`
	Timeouts   int  `json:"timeouts"`
	Skipped    int  `json:"skipped"`
	Complete   bool `json:"complete"`
}

// VersionRow is one version observed, in a Member's list.
type VersionRow struct {
	Version    string `json:"version"`
	Status     string `json:"status"`
	ObservedAt string `json:"observedAt"`
}

// maxVersionRows bounds the versions a page lists.
const maxVersionRows = 100

// Member is s's package member; nil for a server that is not a package.
func (v *View) Member(s *catalog.Server) (*Member, error) {
	if s.Transport != registry.TransportStdio {
		return nil, nil
	}
	m := &Member{Key: s.Endpoint, Versions: []VersionRow{}}
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
		m.Versions = append(m.Versions, VersionRow{Version: r.Version, Status: string(r.Status), ObservedAt: catalog.FormatTime(r.ObservedAt)})
	}
	return m, nil
}

func runView(r *state.PackageRun) *RunView {
	c := r.Calls
	pv := &RunView{
		Package: r.Package, Version: r.Version, Status: string(r.Status), Detail: nullStr(r.Detail),
		ObservedAt: catalog.FormatTime(r.ObservedAt), Seconds: r.Seconds, Runtime: r.Runtime,
		Calls: CallsView{Total: c.Total, Attempted: c.Attempted, Successful: c.Successful, Errors: c.Errors,
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

// nullStr is s as a JSON string, or null when it is empty.
func nullStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
