package node

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/httpx"
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
	// receiptsCacheBytes is the receipts log's Pebble cache: its reads are
	// few beside the label log's.
	receiptsCacheBytes = 8 << 20
)

// ReceiptsDir is where the node keeps its receipts log: DataDir/receipts,
// a Pebble store of its own beside the label log, so neither log's keys,
// heads or checks know of the other.
func (n *Node) ReceiptsDir() string { return filepath.Join(n.cfg.DataDir, "receipts") }

// receiptsOrigin is the receipts log's checkpoint origin: the label log's
// with "/receipts", so a checkpoint of one never passes for the other's.
func receiptsOrigin(logOrigin string) string { return logOrigin + "/receipts" }

// checkReceipts validates ReceiptIssuers: did:keys, each once.
func (c *Config) checkReceipts() error {
	for i, did := range c.ReceiptIssuers {
		if _, err := awr.ParseDIDKey(did); err != nil {
			return fmt.Errorf("config: ReceiptIssuers[%d] is not an Ed25519 did:key: %w", i, err)
		}
		if slices.Index(c.ReceiptIssuers, did) != i {
			return fmt.Errorf("config: ReceiptIssuers lists %s twice", did)
		}
	}
	return nil
}

// receiptsLog is HISTOR's second tree: anchors of work receipts that the
// hubs the operator lists submit, signed by themselves, each logged once.
// Its heads are histor.receipts-sth/v1, signed with the log key.
type receiptsLog struct {
	log     *hlog.Log
	issuers map[string]bool // ReceiptIssuers; empty: the log accepts nothing
	now     func() time.Time
	trusted []netip.Prefix
	submits *ratelimit.Limiter[httpx.ClientKey]
	// mu makes the duplicate check and the append of one submission one
	// step, as HISTOR's lock on the receipts log does.
	mu sync.Mutex
}

func (n *Node) openReceipts(ctx context.Context) error {
	origin := receiptsOrigin(n.cfg.LogOrigin)
	l, err := hlog.Open(ctx, hlog.Config{
		Dir: n.ReceiptsDir(), Origin: origin, Key: n.id.logKey, DID: n.id.did,
		STHType: format.ReceiptsSTHType, Logger: n.cfg.Logger.With("log", "receipts"),
		CacheBytes: receiptsCacheBytes, Now: n.cfg.Now,
		Registerer: prometheus.WrapRegistererWith(prometheus.Labels{"origin": origin}, n.cfg.Registry),
	})
	if err != nil {
		return err
	}
	limiter, err := ratelimit.New[httpx.ClientKey](ratelimit.Config{Events: AnchorSubmitsPerMinute, Window: time.Minute, MaxKeys: n.cfg.MaxCheckClients})
	if err != nil {
		l.Close()
		return fmt.Errorf("making anchor limiter: %w", err)
	}
	r := &receiptsLog{log: l, issuers: map[string]bool{}, now: n.now, trusted: n.cfg.TrustedProxies, submits: limiter}
	for _, did := range n.cfg.ReceiptIssuers {
		r.issuers[did] = true
	}
	n.receipts = r
	return nil
}

func (n *Node) closeReceipts() error {
	err := n.receipts.log.Close()
	n.receipts = nil
	return err
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
func (r *receiptsLog) submit(ctx context.Context, anchors []any) ([]anchorResult, error) {
	if len(anchors) < 1 || len(anchors) > MaxAnchorBatch {
		return nil, errAnchorBatch
	}
	now := r.now()
	results := make([]anchorResult, len(anchors))
	checked := make([]*receipt.Anchor, len(anchors))
	for i, v := range anchors {
		a, err := receipt.CheckAnchor(v, func(did string) bool { return r.issuers[did] }, now)
		var re *receipt.RefusedError
		if errors.As(err, &re) {
			results[i] = anchorResult{ReceiptDigest: sentDigest(v), Status: "refused", Reason: re.Reason}
			continue
		}
		checked[i] = a
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return results, r.append(ctx, checked, results)
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
// another's. Under r.mu.
func (r *receiptsLog) append(ctx context.Context, checked []*receipt.Anchor, results []anchorResult) error {
	var entries []hlog.Entry
	var positions []int
	batch := map[string]string{} // digest → issuer, of this batch's new ones
	for i, a := range checked {
		if a == nil {
			continue
		}
		issuer, index, err := r.logged(a.ReceiptDigest, batch)
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
	first, err := r.log.Append(ctx, entries, nil)
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
func (r *receiptsLog) logged(digest string, batch map[string]string) (string, *uint64, error) {
	if issuer, ok := batch[digest]; ok {
		return issuer, nil, nil
	}
	index, err := r.log.LabelIndex(digest)
	if errors.Is(err, hlog.ErrNotFound) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("looking up an anchor: %w", err)
	}
	doc, err := r.log.Entry(index)
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
