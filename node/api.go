package node

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	hlog "github.com/histor-observer/histor/log"
)

// Log is what the HTTP API reads. *log.Log satisfies it; the interface keeps
// the handlers honest about being read-only.
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

// cacheImmutable is sent with anything addressed by content or by a
// position that can never change (labels, evidence, full tiles).
const cacheImmutable = "public, max-age=31536000, immutable"

// maxIDBytes bounds a label id or an evidence SRI in a path; real ones are
// 45 (urn:uuid:…) and 51 (sha256-…) bytes.
const maxIDBytes = 256

// api is the http.Handler for one node. It holds no mutable state of its own.
type api struct {
	log        Log
	issuer     []byte // the /api/v1/issuer answer, fixed at start
	maxEntries uint64
	version    string
	logger     *slog.Logger
	crawl      func() (running bool, lastError string) // nil without a crawler
	check      *checker                                // POST /api/v1/check; nil answers 503
}

// ServeHTTP routes by hand rather than through http.ServeMux: evidence
// addresses are standard base64 and may hold "/" and "//", which the mux
// would clean and redirect, and the tile paths need strict parsing anyway.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	if r.URL.Path == "/api/v1/check" {
		a.serveCheck(w, r) // the one route that takes POST (and its preflight)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		a.fail(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	// Everything served is public and unauthenticated; any origin may read it.
	h.Set("Access-Control-Allow-Origin", "*")
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/api/v1/"):
		a.routeAPI(w, r, p[len("/api/v1/"):])
	case p == "/log/checkpoint":
		a.serveCheckpoint(w, r)
	case strings.HasPrefix(p, "/log/tile/"):
		a.serveTile(w, r, p[len("/log/tile/"):])
	case p == "/health":
		a.serveHealth(w, r)
	default:
		a.fail(w, http.StatusNotFound, "not found")
	}
}

func (a *api) routeAPI(w http.ResponseWriter, r *http.Request, p string) {
	switch {
	case p == "issuer":
		writeBody(w, "application/json", a.issuer)
	case p == "log/sth":
		a.serveLatestSTH(w, r)
	case strings.HasPrefix(p, "log/sth/"):
		a.serveSTHAt(w, r, p[len("log/sth/"):])
	case p == "log/entries":
		a.serveEntries(w, r)
	case p == "log/proof/inclusion":
		a.serveInclusion(w, r)
	case p == "log/proof/consistency":
		a.serveConsistency(w, r)
	case strings.HasPrefix(p, "labels/"):
		a.routeLabel(w, r, p[len("labels/"):])
	default:
		kind, sri, ok := strings.Cut(p, "/")
		if ok && evidenceKinds[kind] {
			a.serveEvidence(w, r, kind, sri)
			return
		}
		a.fail(w, http.StatusNotFound, "not found")
	}
}

// fail answers an error from one of the api's handlers.
func (a *api) fail(w http.ResponseWriter, status int, detail string) {
	writeDetail(w, status, detail)
}

// writeDetail answers an error the way HISTOR (FastAPI) does:
// {"detail": "..."}.
func writeDetail(w http.ResponseWriter, status int, detail string) {
	body, _ := json.Marshal(struct {
		Detail string `json:"detail"`
	}{detail})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(body)
}

// internal logs a storage failure and answers 500 without its details.
func (a *api) internal(w http.ResponseWriter, r *http.Request, doing string, err error) {
	a.logger.Error("serving request", "path", r.URL.Path, "doing", doing, "err", err)
	a.fail(w, http.StatusInternalServerError, "internal error")
}

func writeBody(w http.ResponseWriter, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

// serveHealth answers /health with HISTOR's member names.
func (a *api) serveHealth(w http.ResponseWriter, r *http.Request) {
	running, lastErr := false, (*string)(nil)
	if a.crawl != nil {
		var msg string
		if running, msg = a.crawl(); msg != "" {
			lastErr = &msg
		}
	}
	body, err := json.Marshal(struct {
		OK             bool    `json:"ok"`
		Service        string  `json:"service"`
		Version        string  `json:"version"`
		Store          string  `json:"store"`
		TreeSize       uint64  `json:"tree_size"`
		CrawlRunning   bool    `json:"crawl_running"`
		LastCrawlError *string `json:"last_crawl_error"`
	}{true, "histor", a.version, "pebble", a.log.Size(), running, lastErr})
	if err != nil {
		a.internal(w, r, "encoding health", err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeBody(w, "application/json", body)
}
