package node

import (
	_ "embed"
	"net/http"
)

// openapiDoc is the OpenAPI 3.1 description of every route in routeTable.
// TestOpenAPIMatchesRoutes keeps the two in step; a validator not written
// here checks the document itself.
//
//go:embed openapi.json
var openapiDoc []byte

// serveOpenAPI answers /api/openapi.json.
func (a *api) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	writeBody(w, "application/json", openapiDoc)
}
