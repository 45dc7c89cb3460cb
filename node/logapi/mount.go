// Package logapi serves the label log over HTTP in its two shapes: HISTOR's
// JSON routes under /api/v1/ (the issuer, signed tree heads, entries,
// inclusion and consistency proofs, labels and their proofs, evidence by
// digest) and the C2SP tlog-tiles resources under /log/tile/. Every route is
// a read; the log is written through its sequencer, never here. It reads the
// node only through Mount. The checkpoint (/log/checkpoint) is not here: the
// node serves it with the federation's cosignatures.
package logapi

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/histor-observer/histor/internal/httpx"
	hlog "github.com/histor-observer/histor/log"
)

// Log is what the routes read of the label log. *log.Log satisfies it; the
// interface keeps the handlers honest about being read-only.
type Log interface {
	Latest() hlog.Head
	HeadAt(size uint64) (hlog.Head, error)
	Size() uint64
	EachEntry(start, end uint64, fn func(index uint64, label []byte) error) error
	Entry(index uint64) ([]byte, error)
	LabelIndex(id string) (uint64, error)
	InclusionProof(index, size uint64) ([][32]byte, error)
	ConsistencyProof(first, second uint64) ([][32]byte, error)
	Evidence(kind, sri string) ([]byte, error)
	HashTile(level, index uint64, width int) ([]byte, error)
	EntryBundle(index uint64, width int) ([]byte, error)
}

// Targets maps a label to the server it labels, as the crawl state knows
// it. *catalog.Catalog satisfies it.
type Targets interface {
	// LabelTarget is the target id of the server label id labels; "" when
	// the crawl state does not know the label.
	LabelTarget(id string) (string, error)
}

// Mount is what the routes read of the node. Log, Issuer, MaxEntries and
// Logger are fixed when the routes are made; Targets is read at every
// request, as the crawl state may come later.
type Mount struct {
	// Log is the label log served. Required to serve (a listing may leave
	// it nil).
	Log Log
	// Issuer is the /api/v1/issuer answer, rendered by the node at start.
	Issuer []byte
	// MaxEntries bounds one /api/v1/log/entries answer.
	MaxEntries uint64
	// Targets is the crawl state's map from labels to servers now; nil, or
	// a nil result, leaves every entry's target_id null.
	Targets func() Targets
	Logger  *slog.Logger
}

// MaxIDBytes bounds a label id in a path; real ones are 45 bytes
// (urn:uuid:…).
const MaxIDBytes = 256

// APIRoutes are the log's JSON routes under /api/v1/, in the order the node
// lists them.
func APIRoutes(m Mount) []httpx.Route {
	get := func(pattern string, h http.HandlerFunc) httpx.Route {
		return httpx.Route{Pattern: pattern, Methods: httpx.GetOnly, Handler: h}
	}
	return []httpx.Route{
		get("/api/v1/issuer", m.serveIssuer),
		get("/api/v1/log/sth", m.serveLatestSTH),
		get("/api/v1/log/sth/{tree_size}", func(w http.ResponseWriter, r *http.Request) {
			m.serveSTHAt(w, r, r.PathValue("tree_size"))
		}),
		get("/api/v1/log/entries", m.serveEntries),
		get("/api/v1/log/proof/inclusion", m.serveInclusion),
		get("/api/v1/log/proof/consistency", m.serveConsistency),
		get("/api/v1/labels/{label_id}", m.serveLabelRoute),
		get("/api/v1/labels/{label_id}/proof", m.serveLabelRoute),
		get("/api/v1/toolsets/{digest...}", m.evidenceRoute("toolsets")),
		get("/api/v1/descriptors/{digest...}", m.evidenceRoute("descriptors")),
		get("/api/v1/pattern-sets/{digest...}", m.evidenceRoute("pattern-sets")),
		get("/api/v1/record-sets/{digest...}", m.evidenceRoute("record-sets")),
		get("/api/v1/behaviour/{digest...}", m.evidenceRoute("behaviour")),
	}
}

// TileRoutes are the log's C2SP tiles under /log/tile/, hash tiles before
// entry bundles.
func TileRoutes(m Mount) []httpx.Route {
	return []httpx.Route{
		{Pattern: "/log/tile/{L}/{N...}", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveTileRoute)},
		{Pattern: "/log/tile/entries/{N...}", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveTileRoute)},
	}
}

// serveIssuer answers /api/v1/issuer with the document rendered at start.
func (m Mount) serveIssuer(w http.ResponseWriter, r *http.Request) {
	httpx.WriteBody(w, "application/json", m.Issuer)
}

// serveLabelRoute hands a label path to routeLabel, which tells a label
// from its proof and bounds the id.
func (m Mount) serveLabelRoute(w http.ResponseWriter, r *http.Request) {
	m.routeLabel(w, r, strings.TrimPrefix(r.URL.Path, "/api/v1/labels/"))
}

// serveTileRoute hands what follows /log/tile/ to the strict tile parser.
func (m Mount) serveTileRoute(w http.ResponseWriter, r *http.Request) {
	m.serveTile(w, r, strings.TrimPrefix(r.URL.Path, "/log/tile/"))
}

func (m Mount) evidenceRoute(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		m.serveEvidence(w, r, kind, r.PathValue("digest"))
	}
}

// targets is the crawl state's map now; nil without one.
func (m Mount) targets() Targets {
	if m.Targets == nil {
		return nil
	}
	return m.Targets()
}

// fail answers an error the way HISTOR (FastAPI) does: {"detail": "..."}.
func fail(w http.ResponseWriter, status int, detail string) {
	httpx.WriteDetail(w, status, detail)
}

// internal logs a storage failure and answers 500 without its details.
func (m Mount) internal(w http.ResponseWriter, r *http.Request, doing string, err error) {
	httpx.Internal(w, r, m.Logger, doing, err)
}
