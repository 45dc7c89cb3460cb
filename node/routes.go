package node

import (
	"net/http"
	"strings"
)

// getOnly is the method list of a read-only route (GET, and so HEAD).
var getOnly = []string{http.MethodGet}

// routeTable is every route the node serves, in the order /metrics, the
// OpenAPI document and Routes list them. To add a route, add an entry here:
// its pattern (HISTOR's path and parameter names where HISTOR has the
// route), its methods and a handler on *api; read path variables with
// r.PathValue. Nothing else routes.
var routeTable = []Route{
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

	{Pattern: "/api/v1/admin/crawl", Methods: []string{http.MethodPost}, serve: (*api).serveAdminCrawl},

	{Pattern: "/log/checkpoint", Methods: getOnly, serve: (*api).serveCheckpoint},
	{Pattern: "/log/tile/{L}/{N...}", Methods: getOnly, serve: serveTileRoute},
	{Pattern: "/log/tile/entries/{N...}", Methods: getOnly, serve: serveTileRoute},
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

func evidenceRoute(kind string) func(*api, http.ResponseWriter, *http.Request) {
	return func(a *api, w http.ResponseWriter, r *http.Request) {
		a.serveEvidence(w, r, kind, r.PathValue("digest"))
	}
}
