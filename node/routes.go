package node

import (
	"net/http"
	"strings"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/receipts"
)

// getOnly is the method list of a read-only route (GET, and so HEAD).
var getOnly = httpx.GetOnly

// routeTable is every route the node serves, in the order /metrics, the
// OpenAPI document and Routes list them. To add a route, add an entry here:
// its pattern (HISTOR's path and parameter names where HISTOR has the
// route), its methods and a handler on *api; read path variables with
// r.PathValue. A part that serves its own routes is mounted by one entry
// in their place. Nothing else routes.
var routeTable = []apiRoute{
	{Pattern: "/health", Methods: getOnly, serve: (*api).serveHealth, unbounded: true},
	{Pattern: "/metrics", Methods: getOnly, serve: (*api).serveMetrics, unbounded: true},

	{Pattern: "/api/openapi.json", Methods: getOnly, serve: (*api).serveOpenAPI},
	{Pattern: "/api/v1/issuer", Methods: getOnly, serve: (*api).serveIssuer},
	{Pattern: "/api/v1/log/sth", Methods: getOnly, serve: (*api).serveLatestSTH},
	{Pattern: "/api/v1/log/sth/{tree_size}", Methods: getOnly, serve: func(a *api, w http.ResponseWriter, r *http.Request) {
		a.serveSTHAt(w, r, r.PathValue("tree_size"))
	}},
	{Pattern: "/api/v1/log/entries", Methods: getOnly, serve: (*api).serveEntries},
	{Pattern: "/api/v1/log/proof/inclusion", Methods: getOnly, serve: (*api).serveInclusion},
	{Pattern: "/api/v1/log/proof/consistency", Methods: getOnly, serve: (*api).serveConsistency},
	{Pattern: "/api/v1/labels/{label_id}", Methods: getOnly, serve: serveLabelRoute},
	{Pattern: "/api/v1/labels/{label_id}/proof", Methods: getOnly, serve: serveLabelRoute},
	{Pattern: "/api/v1/toolsets/{digest...}", Methods: getOnly, serve: evidenceRoute("toolsets")},
	{Pattern: "/api/v1/descriptors/{digest...}", Methods: getOnly, serve: evidenceRoute("descriptors")},
	{Pattern: "/api/v1/pattern-sets/{digest...}", Methods: getOnly, serve: evidenceRoute("pattern-sets")},
	{Pattern: "/api/v1/record-sets/{digest...}", Methods: getOnly, serve: evidenceRoute("record-sets")},
	{Pattern: "/api/v1/behaviour/{digest...}", Methods: getOnly, serve: evidenceRoute("behaviour")},

	// The reading API's records: servers and changes (node/readapi).
	{mount: (*api).readRecordRoutes},
	// The sandbox part's census (node/pkgruns).
	{mount: (*api).packageRoutes},
	// The reading API's summaries: stats, badges and the feed (node/readapi).
	{mount: (*api).readSummaryRoutes},
	// The checker part (node/check).
	{mount: (*api).checkRoutes},
	{Pattern: "/api/v1/admin/crawl", Methods: []string{http.MethodPost}, serve: (*api).serveAdminCrawl},
	// The notifications part: security events, their feed and the webhook log (node/notify).
	{mount: (*api).notifyRoutes},
	{Pattern: "/mcp", Methods: []string{http.MethodPost, http.MethodGet, http.MethodDelete}, serve: (*api).serveMCP},

	// The receipts log (node/receipts) and the AIMarket peer (aimarket.go).
	{mount: func(a *api) []Route { return receipts.Routes(a.receipts) }},
	{Pattern: "/.well-known/ai-market.json", Methods: getOnly, serve: (*api).serveWellKnown},
	{Pattern: "/ai-market/v2/manifest", Methods: getOnly, serve: (*api).serveManifest},
	{Pattern: "/ai-market/v2/search", Methods: getOnly, serve: (*api).serveAIMarketSearch},
	{Pattern: "/ai-market/v2/invoke", Methods: []string{http.MethodPost, http.MethodOptions}, serve: (*api).serveInvoke},

	// The checkpoint with the cosignatures the federation collected (node/federation).
	{mount: (*api).fedCheckpointRoutes},
	{Pattern: "/log/tile/{L}/{N...}", Methods: getOnly, serve: serveTileRoute},
	{Pattern: "/log/tile/entries/{N...}", Methods: getOnly, serve: serveTileRoute},
	// The federation (node/federation): this node's mirrors of other observers' logs,
	// served again as tlog-tiles; the witness (c2sp.org/tlog-witness, at the root) and the
	// evidence it holds.
	{mount: (*api).fedRoutes},

	// The desk: HTML pages for people (node/desk, desk_*.go).
	{Pattern: "/", Methods: getOnly, serve: (*api).serveDeskServers},
	{Pattern: "/servers", Methods: getOnly, serve: (*api).serveDeskServers},
	{Pattern: "/s/{target_id}", Methods: getOnly, serve: withPathValue("target_id", (*api).serveDeskServer)},
	{Pattern: "/changes", Methods: getOnly, serve: (*api).serveDeskChanges},
	{Pattern: "/changes/{change_id}", Methods: getOnly, serve: withPathValue("change_id", (*api).serveDeskChange)},
	{Pattern: "/check", Methods: []string{http.MethodGet, http.MethodPost}, serve: (*api).serveDeskCheck},
	{Pattern: "/network", Methods: getOnly, serve: (*api).serveDeskNetwork},
	{Pattern: "/about", Methods: getOnly, serve: (*api).serveDeskAbout},
	// The desk's Log page and the desk's static files (desk_log.go).
	{Pattern: "/log", Methods: getOnly, serve: (*api).serveDeskLog},
	{Pattern: "/static/{file}", Methods: getOnly, serve: (*api).serveStatic},
}

// serveLabelRoute hands a label path to routeLabel, which tells a label
// from its proof and bounds the id.
func serveLabelRoute(a *api, w http.ResponseWriter, r *http.Request) {
	a.routeLabel(w, r, strings.TrimPrefix(r.URL.Path, "/api/v1/labels/"))
}

// serveTileRoute hands what follows /log/tile/ to the strict tile parser.
func serveTileRoute(a *api, w http.ResponseWriter, r *http.Request) {
	a.serveTile(w, r, strings.TrimPrefix(r.URL.Path, "/log/tile/"))
}

// withPathValue adapts a handler that takes one path variable.
func withPathValue(name string, h func(*api, http.ResponseWriter, *http.Request, string)) func(*api, http.ResponseWriter, *http.Request) {
	return func(a *api, w http.ResponseWriter, r *http.Request) { h(a, w, r, r.PathValue(name)) }
}

func evidenceRoute(kind string) func(*api, http.ResponseWriter, *http.Request) {
	return func(a *api, w http.ResponseWriter, r *http.Request) {
		a.serveEvidence(w, r, kind, r.PathValue("digest"))
	}
}
