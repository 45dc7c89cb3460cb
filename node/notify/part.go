// Package notify is the node's notifications part: the security events it
// derives from what the other parts record (the crawl state's change
// records, the peer view's split servers, the witness's evidence), the
// routes that serve them (/api/v1/security-events, /security-feed.xml), and
// the webhook deliveries of them with the operator's delivery log
// (/api/v1/admin/webhooks).
//
// It is a package apart from node/events (the event store and the signed
// event documents) because it opens node/webhook's deliverer, which itself
// reads node/events: the part sits above both.
package notify

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/internal/pebbledb"
	"github.com/histor-observer/histor/node/events"
)

// DefaultInterval is how often the part looks for new facts to turn into
// security events when Config.Interval is zero.
const DefaultInterval = 30 * time.Second

// Changes is the crawl state's change records, read in sequence order; past
// the last one ChangeBySeq answers state.ErrNotFound. *state.Store is one.
type Changes interface {
	ChangeBySeq(seq int64) (*state.Change, error)
}

// Splits gives the peer view as one derivation pass reads it.
type Splits interface {
	// SplitView is the peer view now; nil while the node has none.
	SplitView() SplitView
}

// SplitView is what the split-view events read of the peer view.
type SplitView interface {
	// SplitServers lists the servers whose observers hold different tool
	// sets at once.
	SplitServers() []string
	// Split is what the observers of server id hold.
	Split(id string) (Split, error)
}

// Split is one server's split view: what each observer holds, and how far
// they agree.
type Split struct {
	Observers []Observer
	Agreement string // the agreement status
	Digests   int    // how many different tool sets the observers hold
}

// Observer is what one observer holds of a server.
type Observer struct {
	DID, Endpoint, Digest, Status string
	ObservedAt, LabelID           string
	LeafIndex, HeadSize           uint64
}

// Evidence is the witness's equivocation evidence.
type Evidence interface {
	// ListEvidence lists every bundle held; none while there is no witness.
	ListEvidence() ([]EvidenceItem, error)
}

// EvidenceItem is one equivocation bundle the witness holds.
type EvidenceItem struct {
	ID, Origin string
	Kind       string // the equivocation's kind, in words
	Seen       time.Time
	Bundle     []byte
}

// Config is what the part needs to open.
type Config struct {
	Dir      string             // the event store's directory
	Key      ed25519.PrivateKey // signs the events
	DID      string             // the signer's DID, named in every event
	Interval time.Duration      // between derivation passes; zero: DefaultInterval
	Logger   *slog.Logger
	Changes  Changes
	Splits   Splits
	Evidence Evidence
}

// Part is the event store and the loop that derives events from the facts
// the other parts record. The derivation is a poller over those stores
// rather than hooks inside them: the change records, the peer view and the
// witness's evidence store each stay unaware of events, every event can be
// derived again from its fact after a crash, and a pass is cheap (a cursor
// for changes, the split set, the evidence list).
type Part struct {
	store   *events.Store
	signer  events.Signer
	src     Config
	logger  *slog.Logger
	every   time.Duration
	wake    chan struct{}
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	derived map[string]bool // evidence ids already turned into events; derive goroutine only
}

// Open opens the event store in cfg.Dir and starts the derivation loop; it
// runs until Close, whatever becomes of ctx.
func Open(ctx context.Context, cfg Config) (*Part, error) {
	s, err := events.Open(cfg.Dir, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("opening the event store: %w", err)
	}
	p := &Part{
		store: s, signer: events.Signer{Key: cfg.Key, DID: cfg.DID}, src: cfg,
		logger: cfg.Logger, every: cfg.Interval, wake: make(chan struct{}, 1), derived: map[string]bool{},
	}
	if p.every == 0 {
		p.every = DefaultInterval
	}
	if p.logger == nil {
		p.logger = slog.Default()
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel = cancel
	p.wg.Go(func() { p.loop(lctx) })
	return p, nil
}

// Close stops the loop, waits for the pass in progress and closes the
// store.
func (p *Part) Close() error {
	p.cancel()
	p.wg.Wait()
	return p.store.Close()
}

// Kick asks for a derivation pass now (after a crawl or a sandbox result
// committed changes). It never blocks.
func (p *Part) Kick() {
	if p == nil {
		return
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Stopped is the error that stopped the event store's writes (a full or
// failing disk), or nil.
func (p *Part) Stopped() error { return p.store.Stopped() }

// PebbleMemory is the event store's (events.Store.PebbleMemory).
func (p *Part) PebbleMemory() pebbledb.Mem { return p.store.PebbleMemory() }

func (p *Part) loop(ctx context.Context) {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		if err := p.derive(); err != nil {
			p.logger.Error("deriving security events", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.wake:
		}
	}
}

// derive runs one pass over the three kinds of fact.
func (p *Part) derive() error {
	return errors.Join(p.deriveChanges(), p.deriveSplits(), p.deriveEvidence())
}
