// Package audit checks a HISTOR log from the outside, trusting nothing but the log's published
// did:key: the latest signed tree head verifies, it extends the head kept by the previous run
// (nothing removed, nothing rewritten, the key unchanged), a label is valid and included, and,
// with tiles, the C2SP tiles hold exactly the tree the head commits to; with Federation, the
// log's C2SP checkpoint agrees with the head, meets a witness policy, and the log serves no
// evidence of its own fork.
//
// It is a stranger to the log on purpose: it keeps one file (the last verified head, as served)
// and needs no keys, so anyone who runs it from cron is a witness of the log they point it at.
package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/histor-observer/histor/log/format"
)

// Options says which log to audit and what to check beyond its head.
type Options struct {
	// Base is the log's base URL, e.g. "https://histor.example"; paths are appended to it.
	Base string
	// StatePath holds the head verified by the previous run; empty means keep nothing.
	// The file is replaced (temp file + rename) only when every check passed.
	StatePath string
	// LabelID, when set, also checks that label's validity and inclusion.
	LabelID string
	// Tiles also reads the whole tree through the C2SP tlog-tiles endpoints and checks it.
	Tiles bool
	// Client makes the requests; nil means a client with Timeout.
	Client *http.Client
	// Timeout bounds each request when Client is nil (0 = DefaultTimeout; negative is refused).
	Timeout time.Duration
	// Deadline bounds the whole run (0 = DefaultDeadline; negative is refused), so a log that
	// answers every request slowly, each within Timeout, cannot hold the auditor for ever.
	Deadline time.Duration
	// MaxTilesLeaves is the largest checkpoint size Tiles reads (0 = DefaultMaxTilesLeaves). A
	// larger one makes the audit incomplete before any entry bundle is read: the leaves are
	// checked as they stream in, but reading them still takes time and requests.
	MaxTilesLeaves uint64
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
	// Federation also checks, once the head passed and under a deadline of its own, the log's
	// C2SP checkpoint (/log/checkpoint: signed by its key, the audited root at the audited
	// size) and its equivocation evidence (/api/v1/evidence: none about itself).
	Federation bool
	// Policy, with Federation, also requires the checkpoint to meet this c2sp.org/tlog-policy:
	// signed by one of its logs and cosigned by a quorum of its witnesses.
	Policy *format.Policy
}

// Defaults for the zero Options fields.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultDeadline       = 30 * time.Minute
	DefaultMaxTilesLeaves = 4_000_000
)

// Report is what a passing audit saw; its JSON is printed by `histor audit`.
type Report struct {
	Log       string `json:"log"`
	DID       string `json:"did"`
	TreeSize  uint64 `json:"treeSize"`
	RootHash  string `json:"rootHash"`
	Signature string `json:"signature,omitempty"`
	// Empty says the log holds no label yet, so there was nothing to check.
	Empty       bool         `json:"empty,omitempty"`
	Note        string       `json:"note,omitempty"`
	Consistency string       `json:"consistency,omitempty"`
	Label       *LabelReport `json:"label,omitempty"`
	Tiles       *TilesReport `json:"tiles,omitempty"`
}

// LabelReport says where a checked label sits in the tree.
type LabelReport struct {
	ID        string `json:"id"`
	LeafIndex uint64 `json:"leafIndex"`
	Inclusion string `json:"inclusion"`
}

// TilesReport says how much of the tree was read through the tiles.
type TilesReport struct {
	CheckpointSize uint64 `json:"checkpointSize"`
	Entries        uint64 `json:"entries"`
	HashTiles      int    `json:"hashTiles"`
	EntryBundles   int    `json:"entryBundles"`
}

// Run audits the log at opt.Base. A nil error means every check passed. Otherwise the error is
// a *MisbehaviourError (the log failed a check) or an *IncompleteError (the audit could not run
// to the end, which says nothing about the log's honesty); ExitCode maps it for a shell.
func Run(ctx context.Context, opt Options) (*Report, error) {
	a, err := newAuditor(opt)
	if err != nil {
		return nil, err
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, a.deadline)
	defer cancel()
	rep, err := a.run(ctx)
	var inc *IncompleteError
	// Name our deadline only when it is what expired, not the caller's.
	if errors.As(err, &inc) && errors.Is(ctx.Err(), context.DeadlineExceeded) && parent.Err() == nil {
		return nil, incomplete(fmt.Sprintf("%s (the audit's deadline of %s expired)", inc.Step, a.deadline), inc.Err)
	}
	if err == nil && opt.Federation {
		err = a.federation(parent, rep)
	}
	return rep, err
}

type auditor struct {
	opt       Options
	base      string
	http      *http.Client
	log       *slog.Logger
	deadline  time.Duration
	maxLeaves uint64
}

func newAuditor(opt Options) (*auditor, error) {
	base := strings.TrimRight(opt.Base, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, &IncompleteError{Step: "reading the base URL", Err: fmt.Errorf("%q is not an http(s) URL", opt.Base)}
	}
	if opt.Timeout < 0 || opt.Deadline < 0 {
		return nil, incomplete("reading the options", fmt.Errorf("timeout %s and deadline %s must not be negative", opt.Timeout, opt.Deadline))
	}
	client := opt.Client
	if client == nil {
		timeout := cmp.Or(opt.Timeout, DefaultTimeout)
		// Never follow a redirect: the log must answer at the address the auditor was given.
		client = &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}
	}
	logger := opt.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &auditor{opt: opt, base: base, http: client, log: logger,
		deadline: cmp.Or(opt.Deadline, DefaultDeadline), maxLeaves: cmp.Or(opt.MaxTilesLeaves, DefaultMaxTilesLeaves)}, nil
}

// run is the audit as a list of steps; each returns a typed error on the first failed check.
func (a *auditor) run(ctx context.Context) (*Report, error) {
	iss, err := a.issuer(ctx)
	if err != nil {
		return nil, err
	}
	kept, err := loadState(a.opt.StatePath)
	if err != nil {
		return nil, err
	}
	if kept != nil && kept.Log != iss.DID {
		return nil, misbehaved("key", "the log key changed: kept %s, now %s", kept.Log, iss.DID)
	}
	sth, err := a.latestHead(ctx, iss)
	if isEmptyLog(err) {
		return a.empty(iss, kept)
	}
	if err != nil {
		return nil, err
	}
	rep := &Report{Log: a.base, DID: iss.DID, TreeSize: sth.Size, RootHash: sth.rootHex(), Signature: "ok"}
	if rep.Consistency, err = a.consistency(ctx, kept, sth); err != nil {
		return nil, err
	}
	if a.opt.LabelID != "" {
		if rep.Label, err = a.label(ctx, iss, sth, a.opt.LabelID); err != nil {
			return nil, err
		}
	}
	if a.opt.Tiles {
		if rep.Tiles, err = a.tiles(ctx, iss, sth); err != nil {
			return nil, err
		}
	}
	if err := saveState(a.opt.StatePath, sth); err != nil {
		return nil, err
	}
	return rep, nil
}

// empty is the audit of a log that holds no label yet and so has no head
// (HISTOR signs none over an empty tree): nothing to audit yet, and nothing
// is kept, so the next run starts from the first real head. A log that said
// so after a head was kept has gone back.
func (a *auditor) empty(iss *issuerDoc, kept *head) (*Report, error) {
	if kept != nil {
		return nil, misbehaved("consistency", "the log says it is empty, but a head of size %d was kept", kept.Size)
	}
	return &Report{Log: a.base, DID: iss.DID, Empty: true, Note: "nothing to audit yet: the log is empty"}, nil
}

// ExitCode maps Run's error for a shell: 0 every check passed, 1 the log misbehaved, 2 the audit
// could not be completed.
func ExitCode(err error) int {
	var mis *MisbehaviourError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &mis):
		return 1
	default:
		return 2
	}
}
