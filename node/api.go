package node

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/aimarket"
	"github.com/histor-observer/histor/node/check"
	"github.com/histor-observer/histor/node/federation"
	"github.com/histor-observer/histor/node/logapi"
	"github.com/histor-observer/histor/node/mcpface"
	"github.com/histor-observer/histor/node/notify"
	"github.com/histor-observer/histor/node/pkgruns"
	"github.com/histor-observer/histor/node/receipts"
)

// Log is what the HTTP API reads: what the label log's routes read
// (node/logapi), and whether the log stopped, for /health. *log.Log
// satisfies it; the interface keeps the handlers honest about being
// read-only.
type Log interface {
	logapi.Log
	// Stopped is the error that stopped the log's appends (a failed write or
	// sync), or nil.
	Stopped() error
}

// cacheImmutable is sent with anything addressed by content or by a
// position that can never change (labels, evidence, full tiles).
const cacheImmutable = httpx.CacheImmutable

// api is the http.Handler for one node. It holds no mutable state of its
// own; its handlers are listed in routeTable.
type api struct {
	router     *httpx.Router // routeTable bound to this api
	log        Log
	issuer     []byte // the /api/v1/issuer answer, fixed at start
	maxEntries uint64
	version    string
	profile    string // Config.Profile, for /health
	// stores is every store of the node open now, by name (Node.openStores).
	stores   func() map[string]store
	logger   *slog.Logger
	operator operatorToken
	crawls   crawlControl            // nil without a crawler
	metrics  http.Handler            // the registry's exposition; nil: /metrics is 404
	read     atomic.Pointer[ReadAPI] // the reading API's data; nil until set (servers.go)
	check    *check.Checker          // POST /api/v1/check; nil answers 503
	fed      *federation.Federation  // witness, cosigned checkpoint, evidence; nil without one
	events   *notify.Part            // /api/v1/security-events, /security-feed.xml; nil: 503
	mcp      *mcpface.Face           // the MCP face at /mcp; nil: 503
	webhooks *notify.Webhooks        // the operator's delivery log; nil without subscriptions
	receipts *receipts.Log           // the receipts log; nil answers 404
	agent    *aimarket.Peer          // the AIMarket peer routes; nil answers 503
	packages *pkgruns.View           // the sandbox's runs: census, package member; nil without crawl state
}

// crawlControl is what the API asks of the node's crawls.
type crawlControl interface {
	// Status: whether a crawl is running, and the error the newest one ended
	// with (nil for none).
	Status() (running bool, lastErr *string)
	// Start begins a crawl in the background unless one is running; since
	// is when the running one began.
	Start() (started bool, since time.Time)
	// Current: the running crawl's start and progress (nil until it has
	// read the registry); ok false when none runs.
	Current() (since time.Time, progress *crawl.ProgressSnapshot, ok bool)
}

// fail answers an error from one of the api's handlers.
func (a *api) fail(w http.ResponseWriter, status int, detail string) {
	writeDetail(w, status, detail)
}

// writeDetail answers an error the way HISTOR (FastAPI) does:
// {"detail": "..."}.
func writeDetail(w http.ResponseWriter, status int, detail string) {
	httpx.WriteDetail(w, status, detail)
}

// internal logs a storage failure and answers 500 without its details.
func (a *api) internal(w http.ResponseWriter, r *http.Request, doing string, err error) {
	httpx.Internal(w, r, a.logger, doing, err)
}

func writeBody(w http.ResponseWriter, contentType string, body []byte) {
	httpx.WriteBody(w, contentType, body)
}

// serveHealth answers /health with HISTOR's members, in its order.
func (a *api) serveHealth(w http.ResponseWriter, r *http.Request) {
	running, lastErr := false, (*string)(nil)
	if a.crawls != nil {
		running, lastErr = a.crawls.Status()
	}
	var logErr *string
	if err := a.log.Stopped(); err != nil {
		msg := err.Error()
		logErr = &msg
	}
	stores := map[string]string{}
	if a.stores != nil {
		for name, s := range a.stores() {
			// The log's is log_error, as HISTOR's.
			if err := s.Stopped(); err != nil && name != "log" {
				stores[name] = err.Error()
			}
		}
	}
	body, err := json.Marshal(struct {
		OK             bool    `json:"ok"`
		Service        string  `json:"service"`
		Version        string  `json:"version"`
		Profile        string  `json:"profile"`
		Store          string  `json:"store"`
		TreeSize       uint64  `json:"tree_size"`
		CrawlRunning   bool    `json:"crawl_running"`
		LastCrawlError *string `json:"last_crawl_error"`
		LogError       *string `json:"log_error"`
		// StoreErrors names the node's other stores a failed write stopped.
		StoreErrors map[string]string `json:"store_errors"`
	}{logErr == nil && len(stores) == 0, "histor", a.version, a.profile, "pebble", a.log.Size(), running, lastErr, logErr, stores})
	if err != nil {
		a.internal(w, r, "encoding health", err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeBody(w, "application/json", body)
}

// serveMetrics answers /metrics from the node's registry.
func (a *api) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if a.metrics == nil {
		a.fail(w, http.StatusNotFound, "no metrics")
		return
	}
	a.metrics.ServeHTTP(w, r)
}
