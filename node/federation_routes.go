package node

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/histor-observer/histor/witness"
)

// serveWitness hands a c2sp.org/tlog-witness request (POST /add-checkpoint,
// GET /<origin hash>/checkpoint) to the witness; a node that witnesses no
// log answers as a witness does for an unknown one.
func (a *api) serveWitness(w http.ResponseWriter, r *http.Request) {
	if a.fed == nil || a.fed.wit == nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("this node witnesses no log\n"))
		return
	}
	a.fed.wit.Handler().ServeHTTP(w, r)
}

// serveCosignedCheckpoint answers /log/checkpoint with the newest
// checkpoint and every cosignature the submitter collected for it, or the
// log's own when it has none for the latest head.
func (a *api) serveCosignedCheckpoint(w http.ResponseWriter, r *http.Request) {
	if a.fed == nil || a.fed.sub.Load() == nil {
		a.serveCheckpoint(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.Write(a.fed.cosignedCheckpoint(a.log.Latest()))
}

// maxEvidenceList bounds one /api/v1/evidence answer. A bundle takes a
// witnessed log's key to make, so more than this is a log gone very wrong.
const maxEvidenceList = 1000

// evidenceEntry is one bundle in the /api/v1/evidence list.
type evidenceEntry struct {
	ID     string `json:"id"`
	Origin string `json:"origin"`
	Kind   string `json:"kind"` // "same-size" or "failed-proof"
	Seen   string `json:"seen"` // when this node stored it, RFC 3339 UTC
	URL    string `json:"url"`
}

// serveEvidenceList answers /api/v1/evidence: the equivocation bundles this
// node holds, in ID order.
func (a *api) serveEvidenceList(w http.ResponseWriter, r *http.Request) {
	out := struct {
		Evidence  []evidenceEntry `json:"evidence"`
		Truncated bool            `json:"truncated"`
	}{Evidence: []evidenceEntry{}}
	if a.fed != nil && a.fed.wit != nil {
		list, err := a.fed.wit.ListEvidence()
		if err != nil {
			a.internal(w, r, "listing evidence", err)
			return
		}
		for i, e := range list {
			if i == maxEvidenceList {
				out.Truncated = true
				break
			}
			out.Evidence = append(out.Evidence, evidenceEntry{ID: e.ID, Origin: e.Origin, Kind: e.Kind.String(),
				Seen: e.Seen.UTC().Format(time.RFC3339), URL: "/api/v1/evidence/" + e.ID})
		}
	}
	body, err := json.Marshal(out)
	if err != nil {
		a.internal(w, r, "encoding evidence list", err)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeBody(w, "application/json", body)
}

// serveEvidenceBundle answers /api/v1/evidence/<id>: one bundle, as
// format.Equivocation encodes it; check it with format.VerifyEquivocation
// and the log's key.
func (a *api) serveEvidenceBundle(w http.ResponseWriter, r *http.Request, id string) {
	if a.fed == nil || a.fed.wit == nil {
		a.fail(w, http.StatusNotFound, "no such evidence")
		return
	}
	e, err := a.fed.wit.GetEvidence(id)
	if errors.Is(err, witness.ErrNotFound) {
		a.fail(w, http.StatusNotFound, "no such evidence")
		return
	}
	if err != nil {
		a.internal(w, r, "reading evidence", err)
		return
	}
	w.Header().Set("Cache-Control", cacheImmutable)
	writeBody(w, "text/plain; charset=utf-8", e.Bundle)
}
