// Package proofs answers the Merkle proofs the node's logs serve, in HISTOR's shapes, so the
// label log's routes and the receipts log's answer them with the same bytes.
package proofs

import (
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/histor-observer/histor/internal/httpx"
	hlog "github.com/histor-observer/histor/log"
)

// Consistent is the part of a log a consistency proof reads.
type Consistent interface {
	Size() uint64
	ConsistencyProof(first, second uint64) ([][32]byte, error)
}

// ServeConsistency answers ?first=&second= with the proof between those sizes of tree:
// {"first":x,"second":y,"proof":[hex,…]}, or HISTOR's 400 for sizes out of bounds.
func ServeConsistency(w http.ResponseWriter, r *http.Request, tree Consistent, logger *slog.Logger) {
	first, second := httpx.Uint{Name: "first"}, httpx.Uint{Name: "second"}
	if err := readRequired(r, &first, &second); err != nil {
		httpx.WriteDetail(w, http.StatusBadRequest, err.Error())
		return
	}
	switch {
	case first.Value < 1:
		httpx.WriteDetail(w, http.StatusBadRequest, "first must be at least 1")
		return
	case first.Value > second.Value:
		httpx.WriteDetail(w, http.StatusBadRequest, "first must not exceed second")
		return
	case second.Value > tree.Size():
		httpx.WriteDetail(w, http.StatusBadRequest, "second is larger than the log")
		return
	}
	var proof [][32]byte
	if first.Value < second.Value { // RFC 9162: between equal sizes the proof is empty
		var err error
		if proof, err = tree.ConsistencyProof(first.Value, second.Value); err != nil {
			Failed(w, r, logger, err)
			return
		}
	}
	Write(w, `{"first":`, first.Value, `,"second":`, second.Value, proof)
}

// readRequired reads and requires the named parameters.
func readRequired(r *http.Request, ps ...*httpx.Uint) error {
	if err := httpx.ReadUints(r.URL.RawQuery, ps...); err != nil {
		return err
	}
	return httpx.Require(ps...)
}

// Write answers {"<a>":x,"<b>":y,"proof":[hex,…]}, HISTOR's shape for both proofs; head and
// mid are the opening JSON up to each number. The tree only grows, so a proof between fixed
// sizes never changes: it is sent immutable.
func Write(w http.ResponseWriter, head string, x uint64, mid string, y uint64, proof [][32]byte) {
	b := GetBuf()
	defer PutBuf(b)
	*b = append(*b, head...)
	*b = strconv.AppendUint(*b, x, 10)
	*b = append(*b, mid...)
	*b = strconv.AppendUint(*b, y, 10)
	*b = append(*b, `,"proof":`...)
	*b = AppendHexList(*b, proof)
	*b = append(*b, '}')
	w.Header().Set("Cache-Control", httpx.CacheImmutable)
	httpx.WriteBody(w, "application/json", *b)
}

// Failed answers a log's error for proof arguments already checked: a range error means the
// log disagrees with those bounds (the tree moved under us is impossible, it only grows), so
// it is still the caller's 400; anything else, a damaged store above all, is a logged 500
// that tells the caller nothing of the store.
func Failed(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	var re *hlog.RangeError
	var ce *hlog.CorruptError
	if !errors.As(err, &ce) && errors.As(err, &re) {
		httpx.WriteDetail(w, http.StatusBadRequest, err.Error())
		return
	}
	httpx.Internal(w, r, logger, "computing proof", err)
}

// AppendHexList appends a JSON array of lowercase hex hashes, the form HISTOR's proofs take.
func AppendHexList(b []byte, hashes [][32]byte) []byte {
	b = append(b, '[')
	for i := range hashes {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = hex.AppendEncode(b, hashes[i][:])
		b = append(b, '"')
	}
	return append(b, ']')
}

// bufPool recycles answer buffers; proofs are the hot path and a proof answer is about
// 1.5 KB at a million leaves.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// GetBuf returns an empty answer buffer from the pool; PutBuf gives it back.
func GetBuf() *[]byte { b := bufPool.Get().(*[]byte); *b = (*b)[:0]; return b }

// PutBuf gives b back to the pool, unless it grew large.
func PutBuf(b *[]byte) {
	if cap(*b) <= 64<<10 { // don't keep the occasional huge buffer alive
		bufPool.Put(b)
	}
}
