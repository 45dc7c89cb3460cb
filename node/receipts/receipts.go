// Package receipts is the node's receipts log, HISTOR's second tree: anchors of work receipts
// that the hubs the operator lists submit, signed by themselves, each logged once.
// Its heads are histor.receipts-sth/v1, signed with the node's log key, and it is a Pebble
// store of its own beside the label log, so neither log's keys, heads or checks know of the
// other. Open opens it, Routes serves it and Close closes it.
package receipts

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/internal/pebbledb"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/receipt"
	"github.com/histor-observer/histor/node/ratelimit"
)

// Bounds of the receipts log, HISTOR's.
const (
	// MaxAnchorBatch is the most anchors one POST /api/v1/receipts/anchors
	// carries.
	MaxAnchorBatch = 100
	// AnchorSubmitsPerMinute is how often one client address may submit.
	AnchorSubmitsPerMinute = 120
	// DefaultMaxBodyBytes is the bound the node sets on a submission's
	// body (Config.MaxBodyBytes): HISTOR's read_json bound, 2 MiB. It is
	// the receipts log's own, not /check's, though the two are equal.
	DefaultMaxBodyBytes = 2 << 20
	// cacheBytes is the receipts log's Pebble cache: its reads are few
	// beside the label log's.
	cacheBytes = 8 << 20
)

// Config is what the receipts log needs.
type Config struct {
	// Dir is the log's Pebble store.
	Dir string
	// Origin is the checkpoint origin of its heads (see Origin).
	Origin string
	// Key signs its heads, and DID (the key's did:key) is their log member.
	Key ed25519.PrivateKey
	DID string
	// Issuers are the did:keys (Ed25519) whose anchors it logs, each once;
	// none: it is served but accepts nothing.
	Issuers []string
	// TrustedProxies are the proxies whose X-Forwarded-For names the client
	// the submission limit counts against.
	TrustedProxies []netip.Prefix
	// MaxClients bounds the clients the submission limit tracks at once.
	MaxClients int
	// MaxBodyBytes bounds a submission's body; a larger one is answered 413.
	MaxBodyBytes int64
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Logger receives the log's messages and the routes' internal errors.
	Logger *slog.Logger
	// Registerer takes the log's series, labelled origin=Origin; nil
	// registers none.
	Registerer prometheus.Registerer
}

// Origin is the receipts log's checkpoint origin beside the label log of
// logOrigin: the label log's with "/receipts", so a checkpoint of one never
// passes for the other's.
func Origin(logOrigin string) string { return logOrigin + "/receipts" }

// IssuerError is an entry of Config.Issuers the receipts log refuses.
type IssuerError struct {
	Index int    // its place in the list
	DID   string // the entry
	// Twice: it is listed at an earlier place too; otherwise Err says why
	// it is not an Ed25519 did:key.
	Twice bool
	Err   error
}

func (e *IssuerError) Error() string {
	if e.Twice {
		return fmt.Sprintf("issuer %s is listed twice", e.DID)
	}
	return fmt.Sprintf("issuer %d is not an Ed25519 did:key: %v", e.Index, e.Err)
}

func (e *IssuerError) Unwrap() error { return e.Err }

// CheckIssuers reports the first issuer Open refuses, as an *IssuerError:
// one that is not an Ed25519 did:key, or one listed twice.
func CheckIssuers(issuers []string) error {
	for i, did := range issuers {
		if _, err := awr.ParseDIDKey(did); err != nil {
			return &IssuerError{Index: i, DID: did, Err: err}
		}
		if slices.Index(issuers, did) != i {
			return &IssuerError{Index: i, DID: did, Twice: true}
		}
	}
	return nil
}

// Log is an open receipts log.
type Log struct {
	log          *hlog.Log
	issuers      map[string]bool // Config.Issuers; empty: the log accepts nothing
	now          func() time.Time
	trusted      []netip.Prefix
	submits      *ratelimit.Limiter[httpx.ClientKey]
	maxBodyBytes int64
	logger       *slog.Logger
	// mu makes the duplicate check and the append of one submission one
	// step, as HISTOR's lock on the receipts log does.
	mu sync.Mutex
}

// Open opens (creating it if needed) the receipts log cfg describes.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	limiter, err := ratelimit.New[httpx.ClientKey](ratelimit.Config{Events: AnchorSubmitsPerMinute, Window: time.Minute, MaxKeys: cfg.MaxClients})
	if err != nil {
		return nil, fmt.Errorf("making the anchor limiter: %w", err)
	}
	l, err := hlog.Open(ctx, hlog.Config{
		Dir: cfg.Dir, Origin: cfg.Origin, Key: cfg.Key, DID: cfg.DID,
		STHType: format.ReceiptsSTHType, Logger: cfg.Logger.With("log", "receipts"),
		CacheBytes: cacheBytes, Now: cfg.Now,
		Registerer: prometheus.WrapRegistererWith(prometheus.Labels{"origin": cfg.Origin}, cfg.Registerer),
	})
	if err != nil {
		return nil, fmt.Errorf("opening the receipts log: %w", err)
	}
	rl := &Log{log: l, issuers: map[string]bool{}, now: cfg.Now, trusted: cfg.TrustedProxies,
		submits: limiter, maxBodyBytes: cfg.MaxBodyBytes, logger: cfg.Logger}
	if rl.now == nil {
		rl.now = time.Now
	}
	for _, did := range cfg.Issuers {
		rl.issuers[did] = true
	}
	return rl, nil
}

// checkConfig refuses a Config Open cannot serve.
func checkConfig(cfg Config) error {
	if err := CheckIssuers(cfg.Issuers); err != nil {
		return fmt.Errorf("receipts: checking the issuers: %w", err)
	}
	if cfg.MaxBodyBytes <= 0 {
		return errors.New("receipts: MaxBodyBytes must be positive")
	}
	return nil
}

// Stopped is the failed write that stopped the receipts log's appends (hlog.Log.Stopped).
func (l *Log) Stopped() error { return l.log.Stopped() }

// PebbleMemory is the receipts log's hlog.Log.PebbleMemory.
func (l *Log) PebbleMemory() pebbledb.Mem { return l.log.PebbleMemory() }

// Close closes the log; its routes must be served no more.
func (l *Log) Close() error {
	if err := l.log.Close(); err != nil {
		return fmt.Errorf("closing the receipts log: %w", err)
	}
	return nil
}

// anchorResult is one anchor's outcome, HISTOR's members: logged or
// duplicate with its leaf index, or refused with the reason.
type anchorResult struct {
	ReceiptDigest any     `json:"receipt_digest"` // as sent; null when it sent none
	Status        string  `json:"status"`
	Reason        string  `json:"reason,omitempty"`
	LeafIndex     *uint64 `json:"leaf_index,omitempty"`
}

// errAnchorBatch is HISTOR's refusal of a whole submission.
var errAnchorBatch = fmt.Errorf("anchors must be a list of 1-%d", MaxAnchorBatch)

// submit logs a batch of anchors (as the canonical parser read them): one
// result per anchor, in order; a refused anchor never blocks the rest.
// It returns once the logged ones are durable under a signed head.
func (l *Log) submit(ctx context.Context, anchors []any) ([]anchorResult, error) {
	if len(anchors) < 1 || len(anchors) > MaxAnchorBatch {
		return nil, errAnchorBatch
	}
	now := l.now()
	results := make([]anchorResult, len(anchors))
	checked := make([]*receipt.Anchor, len(anchors))
	for i, v := range anchors {
		a, err := receipt.CheckAnchor(v, func(did string) bool { return l.issuers[did] }, now)
		var re *receipt.RefusedError
		if errors.As(err, &re) {
			results[i] = anchorResult{ReceiptDigest: sentDigest(v), Status: "refused", Reason: re.Reason}
			continue
		}
		checked[i] = a
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return results, l.append(ctx, checked, results)
}

// sentDigest is the receiptDigest member of a refused anchor, whatever it
// holds, or nil.
func sentDigest(v any) any {
	if m, ok := v.(map[string]any); ok {
		return m["receiptDigest"]
	}
	return nil
}

// append logs the checked anchors that are new and fills their results;
// one already logged is a duplicate of its own issuer's, refused for
// another's. Under l.mu.
func (l *Log) append(ctx context.Context, checked []*receipt.Anchor, results []anchorResult) error {
	var entries []hlog.Entry
	var positions []int
	batch := map[string]string{} // digest → issuer, of this batch's new ones
	for i, a := range checked {
		if a == nil {
			continue
		}
		issuer, index, err := l.logged(a.ReceiptDigest, batch)
		switch {
		case err != nil:
			return err
		case issuer != "" && issuer != a.Issuer:
			results[i] = anchorResult{ReceiptDigest: a.ReceiptDigest, Status: "refused", Reason: "this digest is already anchored by another issuer"}
		case issuer != "":
			results[i] = anchorResult{ReceiptDigest: a.ReceiptDigest, Status: "duplicate", LeafIndex: index}
			if index == nil { // logged earlier in this batch: its index comes with the append
				positions = append(positions, -1-i)
			}
		default:
			batch[a.ReceiptDigest] = a.Issuer
			entries = append(entries, hlog.Entry{ID: a.ReceiptDigest, Label: a.JCS})
			positions = append(positions, i)
		}
	}
	if len(entries) == 0 {
		return nil
	}
	first, err := l.log.Append(ctx, entries, nil)
	if err != nil {
		return fmt.Errorf("appending anchors: %w", err)
	}
	fillIndexes(checked, results, positions, first)
	return nil
}

// fillIndexes gives each logged anchor its leaf index, and a duplicate of
// one logged in the same batch the same index. positions lists the logged
// ones' places in append order, and a duplicate's place p as -1-p.
func fillIndexes(checked []*receipt.Anchor, results []anchorResult, positions []int, first uint64) {
	byDigest := map[string]uint64{}
	next := first
	for _, p := range positions {
		if p >= 0 {
			idx := next
			next++
			byDigest[checked[p].ReceiptDigest] = idx
			results[p] = anchorResult{ReceiptDigest: checked[p].ReceiptDigest, Status: "logged", LeafIndex: &idx}
		}
	}
	for _, p := range positions {
		if p < 0 {
			idx := byDigest[checked[-1-p].ReceiptDigest]
			results[-1-p].LeafIndex = &idx
		}
	}
}

// logged says who anchored digest, in this batch (index nil) or in the
// log (with its index); "" when nobody has.
func (l *Log) logged(digest string, batch map[string]string) (string, *uint64, error) {
	if issuer, ok := batch[digest]; ok {
		return issuer, nil, nil
	}
	index, err := l.log.LabelIndex(digest)
	if errors.Is(err, hlog.ErrNotFound) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("looking up an anchor: %w", err)
	}
	doc, err := l.log.Entry(index)
	if err != nil {
		return "", nil, fmt.Errorf("reading anchor %d: %w", index, err)
	}
	v, err := canon.Parse(doc)
	m, _ := v.(map[string]any)
	issuer, _ := m["issuer"].(string)
	if err != nil || issuer == "" {
		return "", nil, fmt.Errorf("reading anchor %d: not an anchor", index)
	}
	return issuer, &index, nil
}
