package state

import (
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/histor-observer/histor/sandbox"
)

// Package runs: the sandbox's last run of each package target, and one
// record per version observed (a published version never changes, so a
// version is observed once; its record says how).
const (
	prefixPackageRun     = "p/"  // p/<target>: the latest PackageRun
	prefixPackageVersion = "pv/" // pv/<target>/<version>: the PackageRun of that version
)

// PackageRun is what the node kept of one sandbox run of one package
// version. The run's behaviour record itself is evidence in the log, by SRI.
type PackageRun struct {
	TargetID   string         `json:"targetId"`
	Package    string         `json:"package"` // npm:<name>@<version> or pypi:<name>==<version>
	Version    string         `json:"version"`
	Status     sandbox.Status `json:"status"`
	Detail     string         `json:"detail,omitempty"`
	ObservedAt time.Time      `json:"observedAt"`
	// Behaviour is the SRI of the behaviour record (evidence kind
	// behaviour); BehaviourSHA256 the hex SHA-256 of its bytes, as the
	// census manifest cites it.
	Behaviour       string                `json:"behaviour,omitempty"`
	BehaviourSHA256 string                `json:"behaviourSha256,omitempty"`
	Complete        bool                  `json:"complete"`
	Calls           sandbox.Coverage      `json:"calls"`
	Observer        string                `json:"observer,omitempty"`
	Runtime         sandbox.Runtime       `json:"runtime"`
	Facts           *sandbox.VersionFacts `json:"facts,omitempty"`
	Seconds         float64               `json:"seconds"`
	// Summary is the run as the census reads it: phase completion and
	// coverage, without the records (those are in the behaviour evidence).
	Summary *sandbox.Observation `json:"summary,omitempty"`
}

// PutPackageRun records r as the record of its version and, in the same
// synced write, as its target's latest run, unless r only says the sandbox
// failed (an infrastructure status) and the target has a run that said
// something about the package: that one stays the latest, the baseline the
// next version's facts are compared with.
func (s *Store) PutPackageRun(r PackageRun) error {
	latest := true
	if r.Status.Infrastructure() {
		prev, err := s.PackageRun(r.TargetID)
		switch {
		case err == nil:
			latest = prev.Status.Infrastructure()
		case !errors.Is(err, ErrNotFound):
			return err
		}
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := addPackageRun(b, r, latest); err != nil {
		return err
	}
	if err := s.view.Commit(b); err != nil {
		return fmt.Errorf("writing package run of %s: %w", r.TargetID, err)
	}
	return nil
}

// addPackageRun writes r as its version's run and, when latest, as the
// target's latest.
func addPackageRun(b *pebble.Batch, r PackageRun, latest bool) error {
	if r.TargetID == "" || r.Version == "" {
		return fmt.Errorf("recording package run: target %q version %q", r.TargetID, r.Version)
	}
	if latest {
		if err := setJSON(b, prefixPackageRun+r.TargetID, r); err != nil {
			return err
		}
	}
	return setJSON(b, prefixPackageVersion+r.TargetID+"/"+r.Version, r)
}

// PackageRun returns target id's latest run, ErrNotFound before its first.
func (s *Store) PackageRun(id string) (*PackageRun, error) {
	var r PackageRun
	if err := s.getJSON(prefixPackageRun+id, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// PackageVersion returns the run of one version of target id, ErrNotFound
// if that version was never observed.
func (s *Store) PackageVersion(id, version string) (*PackageRun, error) {
	var r PackageRun
	if err := s.getJSON(prefixPackageVersion+id+"/"+version, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// PackageRuns returns every target's latest run, in target id order.
func (s *Store) PackageRuns() ([]PackageRun, error) {
	return listJSON[PackageRun](s, prefixPackageRun, 0, "package run")
}

// PackageVersions returns the runs of every version of target id observed,
// in version key order, at most limit (0: all).
func (s *Store) PackageVersions(id string, limit int) ([]PackageRun, error) {
	return listJSON[PackageRun](s, prefixPackageVersion+id+"/", limit, "package version")
}
