package node

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/histor-observer/histor/internal/httpx"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/check"
)

// receiptDigestChars is the length of a sha256- SRI digest, the only
// length /api/v1/receipts/proof accepts (HISTOR's bound).
const receiptDigestChars = 51

// receiptsOf answers 404 itself, as HISTOR does on an instance with no
// receipts log, when the node has none.
func (a *api) receiptsOf(w http.ResponseWriter) *receiptsLog {
	if a.receipts == nil {
		a.fail(w, http.StatusNotFound, "this instance has no receipts log")
	}
	return a.receipts
}

// serveAnchors answers POST /api/v1/receipts/anchors {"anchors": [...]}
// with {"results": [...], "sth": <latest receipts head or null>}.
func (a *api) serveAnchors(w http.ResponseWriter, r *http.Request) {
	rl := a.receiptsOf(w)
	if rl == nil {
		return
	}
	if len(rl.issuers) == 0 {
		a.fail(w, http.StatusServiceUnavailable, "the receipts log accepts no issuers on this instance")
		return
	}
	addr, ok := httpx.ClientAddr(r, rl.trusted)
	if !ok {
		a.fail(w, http.StatusBadRequest, "unreadable client address")
		return
	}
	if ok, retry := rl.submits.Allow(httpx.KeyOf(addr)); !ok {
		w.Header().Set("Retry-After", httpx.RetryAfter(retry))
		a.fail(w, http.StatusTooManyRequests, "too many anchor submissions")
		return
	}
	body, status, detail := httpx.ReadJSONObject(w, r, check.MaxBodyBytes)
	if body == nil {
		a.fail(w, status, detail)
		return
	}
	list, _ := body["anchors"].([]any)
	results, err := rl.submit(r.Context(), list)
	switch {
	case errors.Is(err, errAnchorBatch):
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		a.internal(w, r, "anchoring receipts", err)
		return
	}
	sth, err := rl.latestSTH()
	if err != nil && !errors.Is(err, errEmptyLog) {
		a.internal(w, r, "reading the receipts head", err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	a.writeJSON(w, r, struct {
		Results []anchorResult  `json:"results"`
		STH     json.RawMessage `json:"sth"`
	}{results, rawOrNull(sth.STH)})
}

func rawOrNull(b []byte) json.RawMessage {
	if b == nil {
		return json.RawMessage("null")
	}
	return b
}

// latestSTH is the first head signed at the receipts log's size; as for
// the label log, none over an empty tree.
func (rl *receiptsLog) latestSTH() (hlog.Head, error) {
	size := rl.log.Size()
	if size == 0 {
		return hlog.Head{}, errEmptyLog
	}
	return rl.log.HeadAt(size)
}

// serveReceiptsSTH answers /api/v1/receipts/sth.
func (a *api) serveReceiptsSTH(w http.ResponseWriter, r *http.Request) {
	rl := a.receiptsOf(w)
	if rl == nil {
		return
	}
	head, err := rl.latestSTH()
	switch {
	case errors.Is(err, errEmptyLog):
		a.fail(w, http.StatusNotFound, "the receipts log is empty")
		return
	case err != nil:
		a.internal(w, r, "reading the receipts head", err)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeBody(w, "application/json", head.STH)
}

// serveReceiptsSTHAt answers /api/v1/receipts/sth/<size>: the one head
// kept for that size.
func (a *api) serveReceiptsSTHAt(w http.ResponseWriter, r *http.Request, s string) {
	rl := a.receiptsOf(w)
	if rl == nil {
		return
	}
	size, ok := httpx.ParseCanonicalUint(s)
	if !ok {
		a.fail(w, http.StatusBadRequest, "tree size must be a decimal integer without sign or leading zeros")
		return
	}
	head, err := rl.log.HeadAt(size)
	if errors.Is(err, hlog.ErrNotFound) || (err == nil && size == 0) {
		a.fail(w, http.StatusNotFound, "no signed tree head at that size")
		return
	}
	if err != nil {
		a.internal(w, r, "reading the receipts head", err)
		return
	}
	writeBody(w, "application/json", head.STH)
}

// serveReceiptsConsistency answers /api/v1/receipts/proof/consistency with
// the label log's handler over the receipts tree: the same bounds, texts
// and shape, as HISTOR's two routes share theirs.
func (a *api) serveReceiptsConsistency(w http.ResponseWriter, r *http.Request) {
	rl := a.receiptsOf(w)
	if rl == nil {
		return
	}
	(&api{log: rl.log, logger: a.logger}).serveConsistency(w, r)
}

// receiptProof is HISTOR's answer to /api/v1/receipts/proof.
type receiptProof struct {
	Anchor    json.RawMessage `json:"anchor"`
	LeafIndex uint64          `json:"leaf_index"`
	LoggedAt  string          `json:"logged_at"`
	TreeSize  uint64          `json:"tree_size"`
	AuditPath json.RawMessage `json:"audit_path"`
	STH       json.RawMessage `json:"sth"` // null when no head was signed at exactly tree_size
}

// serveReceiptProof answers /api/v1/receipts/proof?digest=&tree_size=:
// the anchor, its index, when it became durable, and its inclusion proof
// under the head at tree_size (the latest head's size when none is given).
func (a *api) serveReceiptProof(w http.ResponseWriter, r *http.Request) {
	rl := a.receiptsOf(w)
	if rl == nil {
		return
	}
	digest, size, err := receiptProofQuery(r.URL.RawQuery)
	if err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	index, err := rl.log.LabelIndex(digest)
	if errors.Is(err, hlog.ErrNotFound) {
		a.fail(w, http.StatusNotFound, "no anchor for that receipt digest")
		return
	}
	if err != nil {
		a.internal(w, r, "looking up an anchor", err)
		return
	}
	have := rl.log.Size()
	if size.Present && size.Value > have {
		a.fail(w, http.StatusBadRequest, "tree_size is larger than the log")
		return
	}
	if !size.Present {
		size.Value = have
	}
	if index >= size.Value {
		a.fail(w, http.StatusBadRequest, "the anchor is not yet inside a signed head of that size")
		return
	}
	p, err := rl.proof(index, size.Value)
	if err != nil {
		a.internal(w, r, "proving an anchor", err)
		return
	}
	a.writeJSON(w, r, p)
}

func (rl *receiptsLog) proof(index, size uint64) (*receiptProof, error) {
	anchor, err := rl.log.Entry(index)
	if err != nil {
		return nil, err
	}
	logged, err := rl.log.HeadIncluding(index)
	if err != nil {
		return nil, err
	}
	path, err := rl.log.InclusionProof(index, size)
	if err != nil {
		return nil, err
	}
	p := &receiptProof{Anchor: anchor, LeafIndex: index, LoggedAt: catalog.FormatTime(logged.Time),
		TreeSize: size, AuditPath: appendHexList(nil, path), STH: json.RawMessage("null")}
	switch head, err := rl.log.HeadAt(size); {
	case err == nil:
		p.STH = head.STH
	case !errors.Is(err, hlog.ErrNotFound):
		return nil, err
	}
	return p, nil
}

// receiptProofQuery reads digest (required, 51 characters; a space is read
// back as the '+' an unencoded link lost) and tree_size (optional, ≥ 1).
func receiptProofQuery(raw string) (string, httpx.Uint, error) {
	digest := httpx.String{Name: "digest"}
	size := httpx.Uint{Name: "tree_size"}
	if err := httpx.ReadStrings(raw, &digest); err != nil {
		return "", size, err
	}
	if err := httpx.ReadUints(raw, &size); err != nil {
		return "", size, err
	}
	d := strings.ReplaceAll(digest.Value, " ", "+")
	switch {
	case !digest.Present:
		return "", size, &httpx.ParamError{Name: "digest", Why: "is required"}
	case len(d) != receiptDigestChars:
		return "", size, &httpx.ParamError{Name: "digest", Why: "must be a sha256- SRI digest of 51 characters"}
	case size.Present && size.Value < 1:
		return "", size, &httpx.ParamError{Name: "tree_size", Why: "must be at least 1"}
	}
	return d, size, nil
}
