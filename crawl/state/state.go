// Package state keeps what the crawler must remember between crawls: the
// targets the registry listed (and whether they were delisted), the latest
// observation of each, the anchor each continuity label compares against,
// change records, the last pattern set used, and a record of each crawl run.
//
// It is a small Pebble database of its own, separate from the log's: the log
// is append-only evidence that outsiders check, while this store is the
// crawler's working memory and may be rewritten freely. Values are JSON, one
// typed record per key.
package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/histor-observer/histor/crawl/registry"
)

// ErrNotFound is returned when a key holds no record.
var ErrNotFound = errors.New("state: not found")

// Key prefixes. Each record kind lives under its own prefix so it can be
// listed with one bounded iterator.
const (
	prefixTarget  = "t/"
	prefixObs     = "o/"
	prefixChange  = "c/"
	prefixRun     = "r/"
	keyPatternSet = "m/pattern-set"
)

// Target is a registry target as last harvested, with its latest status.
type Target struct {
	registry.Target
	// Status is the status of the latest crawl: ok, http-NNN, timeout, …,
	// templated-url, opt-out. Every target has one after its first crawl.
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
	// LastCrawled is when the target was last given a status.
	LastCrawled time.Time `json:"lastCrawled,omitzero"`
}

// Anchor is the observation label a later continuity label compares against.
type Anchor struct {
	LabelID          string    `json:"labelId"`
	LabelSRI         string    `json:"labelSri"` // SRI of the signed label's JCS bytes
	ObservedAt       time.Time `json:"observedAt"`
	SubjectURN       string    `json:"subjectUrn"`
	SubjectDigestSRI string    `json:"subjectDigestSri"`
	ToolSetDigest    string    `json:"toolSetDigest,omitempty"` // "" when that set had no digest
	ToolCount        int       `json:"toolCount"`
}

// Observation is the latest observation of one target and the crawler's
// memory of its history.
type Observation struct {
	TargetID   string    `json:"targetId"`
	Status     string    `json:"status"`
	Detail     string    `json:"detail,omitempty"`
	ObservedAt time.Time `json:"observedAt"`
	// Digest is the MTL/1 tool-set digest; "" when there was none (no tool
	// list, or a refused one such as MTL-NUM-001, named in Refusal).
	Digest  string `json:"digest,omitempty"`
	Refusal string `json:"refusal,omitempty"`
	// ToolSetSRI is the evidence address of the canonical tool set.
	ToolSetSRI       string `json:"toolSetSri,omitempty"`
	DescriptorSRI    string `json:"descriptorSri,omitempty"`
	SubjectURN       string `json:"subjectUrn,omitempty"`
	SubjectDigestSRI string `json:"subjectDigestSri,omitempty"`
	ToolCount        int    `json:"toolCount"`
	// Labels maps a method URN to the id of the latest label of that method.
	Labels map[string]string `json:"labels,omitempty"`
	// PatternSet is the digest of the pattern set the latest scan label used.
	PatternSet string `json:"patternSet,omitempty"`
	// LastOK is the latest observation with status ok and a digest: the
	// "before" of the next change record. Its Tools are the tool array as sent.
	LastOK *OKObservation `json:"lastOk,omitempty"`
	// Anchor is the prior label of the next continuity label; it moves only
	// when a continuity label is issued against it, or on the first label.
	Anchor *Anchor `json:"anchor,omitempty"`
	// StretchReported says the current unreachable stretch already has its
	// one inconclusive continuity label; cleared on the next ok observation.
	StretchReported bool `json:"stretchReported,omitempty"`
}

// OKObservation is enough of an ok observation to diff against later.
type OKObservation struct {
	Digest     string          `json:"digest"`
	ObservedAt time.Time       `json:"observedAt"`
	Tools      json.RawMessage `json:"tools"` // the canonical tool set (JCS)
	// Instructions and Subject let a re-scan rebuild a scan label without a
	// fresh observation.
	Instructions *string `json:"instructions,omitempty"`
}

// Change is one change record: a target's tool-set digest moved.
type Change struct {
	ID       string          `json:"id"`
	TargetID string          `json:"targetId"`
	Name     string          `json:"name"`
	Endpoint string          `json:"endpoint"`
	Before   string          `json:"before"` // tool-set digest before
	After    string          `json:"after"`
	At       time.Time       `json:"at"`
	Summary  json.RawMessage `json:"summary"` // crawl/diff's record of what changed
	// LabelID is the continuity label issued with the change, if one was.
	LabelID string `json:"labelId,omitempty"`
}

// Run records one crawl.
type Run struct {
	Started  time.Time      `json:"started"`
	Ended    time.Time      `json:"ended"`
	Targets  int            `json:"targets"`
	ByStatus map[string]int `json:"byStatus"`
	Labels   int            `json:"labels"`
	Changes  int            `json:"changes"`
	Complete bool           `json:"complete"`
	Error    string         `json:"error,omitempty"`
}

// Store is an open state database. It is safe for concurrent use.
type Store struct {
	db     *pebble.DB
	logger *slog.Logger
}

// Open opens (or creates) the state database in dir.
func Open(dir string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		return nil, fmt.Errorf("opening crawl state %s: %w", dir, err)
	}
	return &Store{db: db, logger: logger}, nil
}

// Close closes the database.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("closing crawl state: %w", err)
	}
	return nil
}

// quietPebble keeps Pebble's informational chatter out of the crawl's logs.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)  {}
func (quietPebble) Errorf(string, ...any) {}
func (quietPebble) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
