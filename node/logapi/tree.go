package logapi

import (
	"errors"
	"net/http"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/internal/proofs"
	hlog "github.com/histor-observer/histor/log"
)

// defaultEntriesSpan is how many entries /api/v1/log/entries returns when no
// end is given, as in HISTOR.
const defaultEntriesSpan = 100

// serveLatestSTH answers /api/v1/log/sth: the first head signed at the
// latest size, the same document /api/v1/log/sth/<size> serves for it, as
// HISTOR keeps one head per size (every crawl signs a fresh head, at the
// same size when it appended nothing; /log/checkpoint serves the newest).
// As HISTOR, which never signs a head over an empty tree, it answers 404
// until the first label: the log keeps a size-0 head for its C2SP
// checkpoint, which witnesses accept, but HISTOR's auditors would keep a
// size-0 STH and be stuck.
func (m Mount) serveLatestSTH(w http.ResponseWriter, r *http.Request) {
	head, err := LatestSTH(m.Log)
	switch {
	case errors.Is(err, ErrEmptyLog):
		fail(w, http.StatusNotFound, detailEmptyLog)
		return
	case err != nil:
		m.internal(w, r, "reading head", err)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	httpx.WriteBody(w, "application/json", head.STH)
}

// ErrEmptyLog: the log has no entries, so no histor.sth/v1 head to serve.
var ErrEmptyLog = errors.New(detailEmptyLog)

// LatestSTH is the head /api/v1/log/sth serves: the first signed at the
// latest size, or ErrEmptyLog before the first label. The node's stats and
// Log page read it so that they name the same head.
func LatestSTH(l Log) (hlog.Head, error) {
	size := l.Latest().Size
	if size == 0 {
		return hlog.Head{}, ErrEmptyLog
	}
	return l.HeadAt(size)
}

// detailEmptyLog is HISTOR's answer for a head of a log with no entries.
const detailEmptyLog = "the log is empty"

// serveSTHAt answers /api/v1/log/sth/<size>: the first head signed at
// exactly that size, the only one HISTOR keeps for it. None is served at
// size 0, where HISTOR has none.
func (m Mount) serveSTHAt(w http.ResponseWriter, r *http.Request, s string) {
	size, ok := httpx.ParseCanonicalUint(s)
	if !ok {
		fail(w, http.StatusBadRequest, "tree size must be a decimal integer without sign or leading zeros")
		return
	}
	if m.Log.Size() == 0 {
		fail(w, http.StatusNotFound, detailEmptyLog)
		return
	}
	head, err := m.Log.HeadAt(size)
	if errors.Is(err, hlog.ErrNotFound) || size == 0 {
		fail(w, http.StatusNotFound, "no signed tree head at that size")
		return
	}
	if err != nil {
		m.internal(w, r, "reading head", err)
		return
	}
	httpx.WriteBody(w, "application/json", head.STH)
}

// serveInclusion answers /api/v1/log/proof/inclusion?leaf_index=&tree_size=.
func (m Mount) serveInclusion(w http.ResponseWriter, r *http.Request) {
	leaf, size := httpx.Uint{Name: "leaf_index"}, httpx.Uint{Name: "tree_size"}
	if err := params(r, &leaf, &size); err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	switch {
	case size.Value < 1:
		fail(w, http.StatusBadRequest, "tree_size must be at least 1")
		return
	case leaf.Value >= size.Value:
		fail(w, http.StatusBadRequest, "leaf_index must be below tree_size")
		return
	case size.Value > m.Log.Size():
		fail(w, http.StatusBadRequest, "tree_size is larger than the log")
		return
	}
	proof, err := m.Log.InclusionProof(leaf.Value, size.Value)
	if err != nil {
		m.proofFailed(w, r, err)
		return
	}
	proofs.Write(w, `{"leafIndex":`, leaf.Value, `,"treeSize":`, size.Value, proof)
}

// serveConsistency answers /api/v1/log/proof/consistency?first=&second=.
func (m Mount) serveConsistency(w http.ResponseWriter, r *http.Request) {
	proofs.ServeConsistency(w, r, m.Log, m.Logger)
}

// params reads and requires the named parameters.
func params(r *http.Request, ps ...*httpx.Uint) error {
	if err := httpx.ReadUints(r.URL.RawQuery, ps...); err != nil {
		return err
	}
	return httpx.Require(ps...)
}

// proofFailed answers a log error for proof arguments already checked (proofs.Failed).
func (m Mount) proofFailed(w http.ResponseWriter, r *http.Request, err error) {
	proofs.Failed(w, r, m.Logger, err)
}
