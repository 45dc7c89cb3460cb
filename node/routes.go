package node

import (
	"net/http"

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
	// The label log: issuer, heads, entries, proofs, labels, evidence (node/logapi).
	{mount: (*api).logRoutes},

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
	// The MCP face (node/mcpface).
	{mount: (*api).mcpRoutes},

	// The receipts log (node/receipts) and the AIMarket peer (node/aimarket).
	{mount: func(a *api) []Route { return receipts.Routes(a.receipts) }},
	{mount: (*api).aimarketRoutes},

	// The checkpoint with the cosignatures the federation collected (node/federation).
	{mount: (*api).fedCheckpointRoutes},
	// The label log's C2SP tiles (node/logapi).
	{mount: (*api).tileRoutes},
	// The federation (node/federation): this node's mirrors of other observers' logs,
	// served again as tlog-tiles; the witness (c2sp.org/tlog-witness, at the root) and the
	// evidence it holds.
	{mount: (*api).fedRoutes},

	// The desk: HTML pages for people, the Log page and its static files
	// (node/desk).
	{mount: (*api).deskRoutes},
}

// withPathValue adapts a handler that takes one path variable.
func withPathValue(name string, h func(*api, http.ResponseWriter, *http.Request, string)) func(*api, http.ResponseWriter, *http.Request) {
	return func(a *api, w http.ResponseWriter, r *http.Request) { h(a, w, r, r.PathValue(name)) }
}
