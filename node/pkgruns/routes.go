package pkgruns

import (
	"log/slog"
	"net/http"

	"github.com/histor-observer/histor/internal/httpx"
)

// Routes are the part's routes: GET /api/v1/census. view is read on every
// request (nil answers 503: the node serves no crawl state); logger takes
// the storage failures answered 500.
func Routes(view func() *View, logger *slog.Logger) []httpx.Route {
	return []httpx.Route{
		{Pattern: "/api/v1/census", Methods: httpx.GetOnly, Handler: serveCensus(view, logger)},
	}
}

// serveCensus answers GET /api/v1/census with the signed census.
func serveCensus(view func() *View, logger *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := view()
		if v == nil {
			httpx.WriteDetail(w, http.StatusServiceUnavailable, "this node serves no crawl state")
			return
		}
		doc, err := v.Census()
		if err != nil {
			httpx.Internal(w, r, logger, "building census", err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		httpx.WriteBody(w, "application/json", doc)
	}
}
