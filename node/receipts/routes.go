package receipts

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/internal/proofs"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/node/catalog"
)

// receiptDigestChars is the length of a sha256- SRI digest, the only
// length /api/v1/receipts/proof accepts (HISTOR's bound).
const receiptDigestChars = 51

// errEmpty: the log has no entries, so no head to serve.
var errEmpty = errors.New("the receipts log is empty")

// Routes are the receipts log's five routes, in the order the node lists
// them. With a nil l every one answers 404, as HISTOR does on an instance
// with no receipts log.
func Routes(l *Log) []httpx.Route {
	return []httpx.Route{
		{Pattern: "/api/v1/receipts/anchors", Methods: []string{http.MethodPost}, Handler: l.handler((*Log).serveAnchors)},
		{Pattern: "/api/v1/receipts/sth", Methods: httpx.GetOnly, Handler: l.handler((*Log).serveSTH)},
		{Pattern: "/api/v1/receipts/sth/{tree_size}", Methods: httpx.GetOnly, Handler: l.handler((*Log).serveSTHAt)},
		{Pattern: "/api/v1/receipts/proof", Methods: httpx.GetOnly, Handler: l.handler((*Log).serveProof)},
		{Pattern: "/api/v1/receipts/proof/consistency", Methods: httpx.GetOnly, Handler: l.handler((*Log).serveConsistency)},
	}
}

// handler binds serve to l, answering 404 itself when there is no l.
func (l *Log) handler(serve func(*Log, http.ResponseWriter, *http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l == nil {
			httpx.WriteDetail(w, http.StatusNotFound, "this instance has no receipts log")
			return
		}
		serve(l, w, r)
	})
}

// serveAnchors answers POST /api/v1/receipts/anchors {"anchors": [...]}
// with {"results": [...], "sth": <latest receipts head or null>}.
func (l *Log) serveAnchors(w http.ResponseWriter, r *http.Request) {
	if len(l.issuers) == 0 {
		httpx.WriteDetail(w, http.StatusServiceUnavailable, "the receipts log accepts no issuers on this instance")
		return
	}
	addr, ok := httpx.ClientAddr(r, l.trusted)
	if !ok {
		httpx.WriteDetail(w, http.StatusBadRequest, "unreadable client address")
		return
	}
	if ok, retry := l.submits.Allow(httpx.KeyOf(addr)); !ok {
		w.Header().Set("Retry-After", httpx.RetryAfter(retry))
		httpx.WriteDetail(w, http.StatusTooManyRequests, "too many anchor submissions")
		return
	}
	body, status, detail := httpx.ReadJSONObject(w, r, l.maxBodyBytes)
	if body == nil {
		httpx.WriteDetail(w, status, detail)
		return
	}
	list, _ := body["anchors"].([]any)
	results, err := l.submit(r.Context(), list)
	switch {
	case errors.Is(err, errAnchorBatch):
		httpx.WriteDetail(w, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		httpx.Internal(w, r, l.logger, "anchoring receipts", err)
		return
	}
	l.writeSubmitted(w, r, results)
}

// writeSubmitted answers a submission: its results and the latest head.
func (l *Log) writeSubmitted(w http.ResponseWriter, r *http.Request, results []anchorResult) {
	sth, err := l.latestSTH()
	if err != nil && !errors.Is(err, errEmpty) {
		httpx.Internal(w, r, l.logger, "reading the receipts head", err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, r, l.logger, struct {
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
func (l *Log) latestSTH() (hlog.Head, error) {
	size := l.log.Size()
	if size == 0 {
		return hlog.Head{}, errEmpty
	}
	return l.log.HeadAt(size)
}

// serveSTH answers /api/v1/receipts/sth.
func (l *Log) serveSTH(w http.ResponseWriter, r *http.Request) {
	head, err := l.latestSTH()
	switch {
	case errors.Is(err, errEmpty):
		httpx.WriteDetail(w, http.StatusNotFound, errEmpty.Error())
		return
	case err != nil:
		httpx.Internal(w, r, l.logger, "reading the receipts head", err)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	httpx.WriteBody(w, "application/json", head.STH)
}

// serveSTHAt answers /api/v1/receipts/sth/<size>: the one head kept for
// that size.
func (l *Log) serveSTHAt(w http.ResponseWriter, r *http.Request) {
	size, ok := httpx.ParseCanonicalUint(r.PathValue("tree_size"))
	if !ok {
		httpx.WriteDetail(w, http.StatusBadRequest, "tree size must be a decimal integer without sign or leading zeros")
		return
	}
	head, err := l.log.HeadAt(size)
	if errors.Is(err, hlog.ErrNotFound) || (err == nil && size == 0) {
		httpx.WriteDetail(w, http.StatusNotFound, "no signed tree head at that size")
		return
	}
	if err != nil {
		httpx.Internal(w, r, l.logger, "reading the receipts head", err)
		return
	}
	httpx.WriteBody(w, "application/json", head.STH)
}

// serveConsistency answers /api/v1/receipts/proof/consistency with the
// label log's answer over the receipts tree: the same bounds, texts and
// shape, as HISTOR's two routes share theirs.
func (l *Log) serveConsistency(w http.ResponseWriter, r *http.Request) {
	proofs.ServeConsistency(w, r, l.log, l.logger)
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

// serveProof answers /api/v1/receipts/proof?digest=&tree_size=: the
// anchor, its index, when it became durable, and its inclusion proof under
// the head at tree_size (the latest head's size when none is given).
func (l *Log) serveProof(w http.ResponseWriter, r *http.Request) {
	digest, size, err := proofQuery(r.URL.RawQuery)
	if err != nil {
		httpx.WriteDetail(w, http.StatusBadRequest, err.Error())
		return
	}
	index, err := l.log.LabelIndex(digest)
	if errors.Is(err, hlog.ErrNotFound) {
		httpx.WriteDetail(w, http.StatusNotFound, "no anchor for that receipt digest")
		return
	}
	if err != nil {
		httpx.Internal(w, r, l.logger, "looking up an anchor", err)
		return
	}
	have := l.log.Size()
	if size.Present && size.Value > have {
		httpx.WriteDetail(w, http.StatusBadRequest, "tree_size is larger than the log")
		return
	}
	if !size.Present {
		size.Value = have
	}
	if index >= size.Value {
		httpx.WriteDetail(w, http.StatusBadRequest, "the anchor is not yet inside a signed head of that size")
		return
	}
	p, err := l.proof(index, size.Value)
	if err != nil {
		httpx.Internal(w, r, l.logger, "proving an anchor", err)
		return
	}
	httpx.WriteJSON(w, r, l.logger, p)
}

// proof is the anchor at index, proved under the tree of size.
func (l *Log) proof(index, size uint64) (*receiptProof, error) {
	anchor, err := l.log.Entry(index)
	if err != nil {
		return nil, fmt.Errorf("reading anchor %d: %w", index, err)
	}
	logged, err := l.log.HeadIncluding(index)
	if err != nil {
		return nil, fmt.Errorf("finding the head that logged anchor %d: %w", index, err)
	}
	path, err := l.log.InclusionProof(index, size)
	if err != nil {
		return nil, fmt.Errorf("proving anchor %d in %d: %w", index, size, err)
	}
	p := &receiptProof{Anchor: anchor, LeafIndex: index, LoggedAt: catalog.FormatTime(logged.Time),
		TreeSize: size, AuditPath: proofs.AppendHexList(nil, path), STH: json.RawMessage("null")}
	switch head, err := l.log.HeadAt(size); {
	case err == nil:
		p.STH = head.STH
	case !errors.Is(err, hlog.ErrNotFound):
		return nil, fmt.Errorf("reading the head at %d: %w", size, err)
	}
	return p, nil
}

// proofQuery reads digest (required, 51 characters; a space is read back
// as the '+' an unencoded link lost) and tree_size (optional, ≥ 1).
func proofQuery(raw string) (string, httpx.Uint, error) {
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
