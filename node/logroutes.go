package node

import (
	"errors"
	"net/http"
	"sync"

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
func (a *api) serveLatestSTH(w http.ResponseWriter, r *http.Request) {
	head, err := a.latestSTH()
	switch {
	case errors.Is(err, errEmptyLog):
		a.fail(w, http.StatusNotFound, detailEmptyLog)
		return
	case err != nil:
		a.internal(w, r, "reading head", err)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeBody(w, "application/json", head.STH)
}

// errEmptyLog: the log has no entries, so no histor.sth/v1 head to serve.
var errEmptyLog = errors.New(detailEmptyLog)

// latestSTH is the first head signed at the latest size.
func (a *api) latestSTH() (hlog.Head, error) {
	size := a.log.Latest().Size
	if size == 0 {
		return hlog.Head{}, errEmptyLog
	}
	return a.log.HeadAt(size)
}

// detailEmptyLog is HISTOR's answer for a head of a log with no entries.
const detailEmptyLog = "the log is empty"

// serveSTHAt answers /api/v1/log/sth/<size>: the first head signed at
// exactly that size, the only one HISTOR keeps for it. None is served at
// size 0, where HISTOR has none.
func (a *api) serveSTHAt(w http.ResponseWriter, r *http.Request, s string) {
	size, ok := httpx.ParseCanonicalUint(s)
	if !ok {
		a.fail(w, http.StatusBadRequest, "tree size must be a decimal integer without sign or leading zeros")
		return
	}
	if a.log.Size() == 0 {
		a.fail(w, http.StatusNotFound, detailEmptyLog)
		return
	}
	head, err := a.log.HeadAt(size)
	if errors.Is(err, hlog.ErrNotFound) || size == 0 {
		a.fail(w, http.StatusNotFound, "no signed tree head at that size")
		return
	}
	if err != nil {
		a.internal(w, r, "reading head", err)
		return
	}
	writeBody(w, "application/json", head.STH)
}

// serveInclusion answers /api/v1/log/proof/inclusion?leaf_index=&tree_size=.
func (a *api) serveInclusion(w http.ResponseWriter, r *http.Request) {
	leaf, size := httpx.Uint{Name: "leaf_index"}, httpx.Uint{Name: "tree_size"}
	if err := a.params(r, &leaf, &size); err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	switch {
	case size.Value < 1:
		a.fail(w, http.StatusBadRequest, "tree_size must be at least 1")
		return
	case leaf.Value >= size.Value:
		a.fail(w, http.StatusBadRequest, "leaf_index must be below tree_size")
		return
	case size.Value > a.log.Size():
		a.fail(w, http.StatusBadRequest, "tree_size is larger than the log")
		return
	}
	proof, err := a.log.InclusionProof(leaf.Value, size.Value)
	if err != nil {
		a.proofFailed(w, r, err)
		return
	}
	proofs.Write(w, `{"leafIndex":`, leaf.Value, `,"treeSize":`, size.Value, proof)
}

// serveConsistency answers /api/v1/log/proof/consistency?first=&second=.
func (a *api) serveConsistency(w http.ResponseWriter, r *http.Request) {
	proofs.ServeConsistency(w, r, a.log, a.logger)
}

// params reads and requires the named parameters.
func (a *api) params(r *http.Request, ps ...*httpx.Uint) error {
	if err := httpx.ReadUints(r.URL.RawQuery, ps...); err != nil {
		return err
	}
	return httpx.Require(ps...)
}

// proofFailed answers a log error for proof arguments already checked (proofs.Failed).
func (a *api) proofFailed(w http.ResponseWriter, r *http.Request, err error) {
	proofs.Failed(w, r, a.logger, err)
}

// bufPool recycles response buffers for the label proofs (labels.go).
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

func getBuf() *[]byte { b := bufPool.Get().(*[]byte); *b = (*b)[:0]; return b }

func putBuf(b *[]byte) {
	if cap(*b) <= 64<<10 { // don't keep the occasional huge buffer alive
		bufPool.Put(b)
	}
}
