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
	"sync"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/internal/pebbledb"
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
	prefixSpan    = "s/"  // s/<target>/<from>: Span
	prefixLabel   = "l/"  // l/<target>/<leaf index>: LabelRef
	prefixLabelID = "li/" // li/<label id>: target id
	prefixSeq     = "cs/" // cs/<seq>: key of the change under prefixChange
	prefixReport  = "k/"  // k/<target>/<day>/<digest>: client report count
	keyPatternSet = "m/pattern-set"
	keyChangeSeq  = "m/change-seq"
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
// memory of its history: the current subject, and the chain of labels that
// continuity extends.
type Observation struct {
	TargetID   string    `json:"targetId"`
	Status     string    `json:"status"` // status of the latest attempt
	Detail     string    `json:"detail,omitempty"`
	ObservedAt time.Time `json:"observedAt"` // time of the latest attempt
	// Subject is the subject digest (SRI of the descriptor's JCS, also its
	// evidence address) of the latest ok observation; "" before the first.
	Subject    string `json:"subject,omitempty"`
	SubjectURN string `json:"subjectUrn,omitempty"`
	// ToolSetDigest is the MTL/1 tool-set digest of that observation (also the
	// evidence address of its canonical tool set); "" when it had none, and
	// Refusal then names why (MTL-NUM-001, MTL-SUBJ-002, …).
	ToolSetDigest string `json:"toolSetDigest,omitempty"`
	Refusal       string `json:"refusal,omitempty"`
	ToolCount     int    `json:"toolCount"`
	// Instructions are the server's instructions as last sent, for re-scans,
	// cut to what a scan reads; InstructionsClipped says they were cut, so a
	// re-scan under larger limits still reports the scan as truncated.
	Instructions        *string `json:"instructions,omitempty"`
	InstructionsClipped bool    `json:"instructionsClipped,omitempty"`
	// LastOK is when the current subject was last seen; UnchangedSince when it
	// was first seen.
	LastOK         time.Time `json:"lastOk,omitzero"`
	UnchangedSince time.Time `json:"unchangedSince,omitzero"`
	// Labels maps a method URN to the id of the latest label of that method.
	Labels map[string]string `json:"labels,omitempty"`
	// Sets is the pattern-set and record-set digests the latest scan and
	// name-threat labels used; a different pair re-issues them.
	Sets string `json:"sets,omitempty"`
	// Anchor is the last link of the target's label chain (its first
	// observation label, then each continuity label): the prior label of the
	// next continuity label.
	Anchor *Anchor `json:"anchor,omitempty"`
	// StretchReported says the current unreachable stretch already has its
	// one inconclusive continuity label; cleared on the next ok observation.
	StretchReported bool `json:"stretchReported,omitempty"`

	// What the reading API reports (HISTOR's server summary). FirstPinned is
	// when the target's first tool-set digest was observed (never changes once
	// set); OKObservations counts ok attempts, Attempts every attempt, Changes
	// the change records; all three never decrease.
	FirstPinned    time.Time `json:"firstPinned,omitzero"`
	OKObservations int       `json:"okObservations,omitempty"`
	Attempts       int       `json:"attempts,omitempty"`
	Changes        int       `json:"changes,omitempty"`
	// BlockMatches, AdviseMatches and RecordMatches count the matches of the
	// current subject's latest pattern-scan (by tier) and name-threat labels.
	BlockMatches  int `json:"blockMatches,omitempty"`
	AdviseMatches int `json:"adviseMatches,omitempty"`
	RecordMatches int `json:"recordMatches,omitempty"`
	// ServerName and ServerVersion are serverInfo.name and .version of the
	// latest ok observation, clipped; "" when not sent as strings.
	ServerName    string `json:"serverName,omitempty"`
	ServerVersion string `json:"serverVersion,omitempty"`
	// Span is the open span of the target's timeline: the run of attempts
	// the latest one belongs to. It is also stored as a Span record.
	Span *Span `json:"span,omitempty"`
}

// Span is one stretch of a target's timeline: consecutive attempts that
// ended alike (same status, same subject and tool-set digests). A new
// attempt that ends alike extends the open span (Until, Count); any other
// starts a new one. Spans are keyed by target and From, so extending one
// rewrites its record.
type Span struct {
	TargetID      string    `json:"targetId"`
	From          time.Time `json:"from"`
	Until         time.Time `json:"until"`
	Count         int       `json:"count"`
	Status        string    `json:"status"`
	Detail        string    `json:"detail,omitempty"`
	ToolSetDigest string    `json:"toolSetDigest,omitempty"`
	SubjectDigest string    `json:"subjectDigest,omitempty"`
	ToolCount     int       `json:"toolCount"`
	ServerName    string    `json:"serverName,omitempty"`
	ServerVersion string    `json:"serverVersion,omitempty"`
}

// LabelRef is one label issued for a target, as the reading API lists it.
// Written with the target's update once the label is durable in the log,
// so LeafIndex is known.
type LabelRef struct {
	TargetID   string    `json:"targetId"`
	ID         string    `json:"id"`
	Method     string    `json:"method"`  // method URN
	Verdict    string    `json:"verdict"` // pass, fail or inconclusive
	Subject    string    `json:"subject"` // subject digest: the label's verifiedWork.digestSRI, as HISTOR's labels.subject
	ObservedAt time.Time `json:"observedAt"`
	IssuedAt   time.Time `json:"issuedAt"`
	Digest     string    `json:"digest"` // SRI of the signed label's bytes
	LeafIndex  uint64    `json:"leafIndex"`
}

// Change is one change record: a target's tool-set digest moved.
type Change struct {
	ID       string `json:"id"`
	TargetID string `json:"targetId"`
	Name     string `json:"name"`
	Endpoint string `json:"endpoint"`
	Before   string `json:"before"` // tool-set digest before; "" when that set had none
	After    string `json:"after"`
	// FromSubject and ToSubject are the subject digests before and after
	// (HISTOR's from_subject and to_subject); "" in records stored before
	// they were kept.
	FromSubject string          `json:"fromSubject,omitempty"`
	ToSubject   string          `json:"toSubject,omitempty"`
	At          time.Time       `json:"at"`
	Summary     json.RawMessage `json:"summary"` // crawl/diff's record of what changed
	// LabelID is the continuity label issued with the change, if one was.
	LabelID string `json:"labelId,omitempty"`
	// Seq is HISTOR's integer change id: assigned by CommitAll, 1, 2, 3…
	// in commit order, never reused. Zero until committed.
	Seq int64 `json:"seq"`
}

// Run records one crawl.
type Run struct {
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	Targets int       `json:"targets"`
	// RegistryServers counts the distinct server names among Targets
	// (HISTOR's registryServers); nil in runs recorded before it was kept.
	RegistryServers *int           `json:"registryServers,omitempty"`
	ByStatus        map[string]int `json:"byStatus"`
	Labels          int            `json:"labels"`
	// ByMethod counts Labels by method URN; nil in runs recorded before it
	// was kept.
	ByMethod map[string]int `json:"byMethod,omitempty"`
	Changes  int            `json:"changes"`
	Complete bool           `json:"complete"`
	Error    string         `json:"error,omitempty"`
}

// Store is an open state database. It is safe for concurrent use.
type Store struct {
	db    *pebble.DB
	guard pebbledb.Guard // every synced write; stopped by the first fatal one or a failed flush
	// view is every read and every commit: reads show only what a commit acknowledged
	// (Pebble's own show a batch in flight, and one whose sync failed).
	view   *pebbledb.Acked
	logger *slog.Logger
	// commitMu serialises CommitAll, so change sequence numbers are
	// assigned in commit order without gaps or repeats, and the client
	// reports' writes and pruning.
	commitMu sync.Mutex
	// prunedOn is the latest day whose client-report pruning has run;
	// guarded by commitMu.
	prunedOn string
}

// Open opens (or creates) the state database in dir.
func Open(dir string, logger *slog.Logger) (*Store, error) { return OpenFS(nil, dir, logger) }

// OpenFS is Open with dir on fsys; nil means the operating system's filesystem. Tests pass
// one that fails.
func OpenFS(fsys vfs.FS, dir string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{logger: logger}
	opts := &pebble.Options{Logger: pebbledb.Quiet(logger), FS: fsys}
	s.guard.Watch(opts, logger)
	db, err := pebbledb.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("opening crawl state %s: %w", dir, err)
	}
	s.db = db
	s.view = pebbledb.NewAcked(db, &s.guard)
	return s, nil
}

// Close closes the database once the commit and reads under way are done; later calls
// answer pebbledb.ErrClosed.
func (s *Store) Close() error {
	if err := s.view.Close(); err != nil {
		return fmt.Errorf("closing crawl state: %w", err)
	}
	return nil
}

// Stopped is the failed write that stopped the crawl state's writes (Pebble's commit pipeline
// cannot go on after one), nil while it takes them. Reads go on, showing what was
// acknowledged before it; reopening clears it.
func (s *Store) Stopped() error { return s.guard.Stopped() }

// PebbleMemory is what the store's Pebble holds outside the Go heap when built with cgo: its
// block cache's bytes and its live WAL's (pebbledb.Acked.Memory).
func (s *Store) PebbleMemory() pebbledb.Mem { return s.view.Memory() }
