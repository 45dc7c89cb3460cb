package federation

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/histor-observer/histor/internal/httpx"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/witness"
)

// Mount is what the federation's routes read of the node, at every request: the routes
// are made before the parts open and answer for as long as the node serves.
type Mount struct {
	// Federation is the federation now; nil answers as a node with no federation part.
	Federation func() *Federation
	// Head is the log's latest head.
	Head func() hlog.Head
	// Checkpoint answers /log/checkpoint with the log's own checkpoint, when no
	// submitter collects cosignatures.
	Checkpoint http.HandlerFunc
	Logger     *slog.Logger
}

// CheckpointRoutes is /log/checkpoint: the newest checkpoint with its cosignatures.
func CheckpointRoutes(m Mount) []httpx.Route {
	return []httpx.Route{{Pattern: "/log/checkpoint", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveCosignedCheckpoint)}}
}

// Routes are this node's mirrors of other observers' logs, served again as tlog-tiles,
// the witness (c2sp.org/tlog-witness, at the root) and the evidence it holds, in the
// order the node lists them.
func Routes(m Mount) []httpx.Route {
	return []httpx.Route{
		{Pattern: "/api/v1/mirrors", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveMirrors)},
		{Pattern: "/mirror/{did}/checkpoint", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveMirrorPath)},
		{Pattern: "/mirror/{did}/tile/{L}/{N...}", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveMirrorPath)},
		{Pattern: "/mirror/{did}/tile/entries/{N...}", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveMirrorPath)},
		{Pattern: "/add-checkpoint", Methods: []string{http.MethodPost}, Handler: http.HandlerFunc(m.serveWitness)},
		{Pattern: "/{origin_hash}/checkpoint", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveWitness)},
		{Pattern: "/api/v1/evidence", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveEvidenceList)},
		{Pattern: "/api/v1/evidence/{id}", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveEvidenceBundle)},
	}
}

// witness is the open witness; nil without one.
func (m Mount) witness() *witness.Witness {
	if f := m.Federation(); f != nil {
		return f.wit.Load()
	}
	return nil
}

// serveWitness hands a c2sp.org/tlog-witness request (POST /add-checkpoint,
// GET /<origin hash>/checkpoint) to the witness; a node that witnesses no
// log answers as a witness does for an unknown one.
func (m Mount) serveWitness(w http.ResponseWriter, r *http.Request) {
	wit := m.witness()
	if wit == nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("this node witnesses no log\n"))
		return
	}
	wit.Handler().ServeHTTP(w, r)
}

// serveCosignedCheckpoint answers /log/checkpoint with the newest
// checkpoint and every cosignature the submitter collected for it, or the
// log's own when it has none for the latest head.
func (m Mount) serveCosignedCheckpoint(w http.ResponseWriter, r *http.Request) {
	f := m.Federation()
	if f == nil || f.sub.Load() == nil {
		m.Checkpoint(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.Write(f.CosignedCheckpoint(m.Head()))
}

// MaxEvidenceList bounds one /api/v1/evidence answer (and the desk's list). A bundle
// takes a witnessed log's key to make, so more than this is a log gone very wrong.
const MaxEvidenceList = 1000

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
func (m Mount) serveEvidenceList(w http.ResponseWriter, r *http.Request) {
	out := struct {
		Evidence  []evidenceEntry `json:"evidence"`
		Truncated bool            `json:"truncated"`
	}{Evidence: []evidenceEntry{}}
	if wit := m.witness(); wit != nil {
		list, err := wit.ListEvidence()
		if err != nil {
			httpx.Internal(w, r, m.Logger, "listing evidence", err)
			return
		}
		for i, e := range list {
			if i == MaxEvidenceList {
				out.Truncated = true
				break
			}
			out.Evidence = append(out.Evidence, evidenceEntry{ID: e.ID, Origin: e.Origin, Kind: e.Kind.String(),
				Seen: e.Seen.UTC().Format(time.RFC3339), URL: "/api/v1/evidence/" + e.ID})
		}
	}
	body, err := json.Marshal(out)
	if err != nil {
		httpx.Internal(w, r, m.Logger, "encoding evidence list", err)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	httpx.WriteBody(w, "application/json", body)
}

// serveEvidenceBundle answers /api/v1/evidence/<id>: one bundle, as
// format.Equivocation encodes it; check it with format.VerifyEquivocation
// and the log's key.
func (m Mount) serveEvidenceBundle(w http.ResponseWriter, r *http.Request) {
	wit := m.witness()
	if wit == nil {
		httpx.WriteDetail(w, http.StatusNotFound, "no such evidence")
		return
	}
	e, err := wit.GetEvidence(r.PathValue("id"))
	if errors.Is(err, witness.ErrNotFound) {
		httpx.WriteDetail(w, http.StatusNotFound, "no such evidence")
		return
	}
	if err != nil {
		httpx.Internal(w, r, m.Logger, "reading evidence", err)
		return
	}
	w.Header().Set("Cache-Control", httpx.CacheImmutable)
	httpx.WriteBody(w, "text/plain; charset=utf-8", e.Bundle)
}
