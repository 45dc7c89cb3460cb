package check

import (
	"log/slog"
	"net/http"

	"github.com/histor-observer/histor/internal/httpx"
)

// Routes are the part's routes: POST /api/v1/check and its CORS preflight.
// They read the Checker from checker at every request, since the routes are
// made before the node opens its parts; a nil or unavailable Checker
// answers 503. logger (nil: slog.Default()) receives the failures
// answered 500.
func Routes(checker func() *Checker, logger *slog.Logger) []httpx.Route {
	if logger == nil {
		logger = slog.Default()
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serveCheck(checker(), logger, w, r) })
	return []httpx.Route{{Pattern: "/api/v1/check", Methods: []string{http.MethodPost, http.MethodOptions}, Handler: h}}
}

// serveCheck answers POST /api/v1/check and its CORS preflight.
func serveCheck(c *Checker, logger *slog.Logger, w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Any origin may ask: no credentials are ever read, the answer is public.
	h.Set("Access-Control-Allow-Origin", "*")
	switch r.Method {
	case http.MethodOptions:
		h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Content-Type")
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodPost:
	default:
		h.Set("Allow", "POST, OPTIONS")
		httpx.WriteDetail(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if !c.Available() {
		h.Set("Retry-After", "3600")
		httpx.WriteDetail(w, http.StatusServiceUnavailable, "check is not available: this node has no crawl state")
		return
	}
	c.serve(logger, w, r)
}

func (c *Checker) serve(logger *slog.Logger, w http.ResponseWriter, r *http.Request) {
	addr, ok := httpx.ClientAddr(r, c.trusted)
	if !ok {
		httpx.WriteDetail(w, http.StatusBadRequest, "unreadable client address")
		return
	}
	client := httpx.KeyOf(addr)
	// Counted before the body is read: a flood of 2 MiB bodies costs the
	// node one map lookup each.
	if ok, retry := c.Allow(client); !ok {
		w.Header().Set("Retry-After", httpx.RetryAfter(retry))
		httpx.WriteDetail(w, http.StatusTooManyRequests, "too many checks; slow down")
		return
	}
	raw, status, err := httpx.ReadBody(w, r, MaxBodyBytes)
	if err != nil {
		httpx.WriteDetail(w, status, err.Error())
		return
	}
	q, err := ParseQuery(raw)
	if err != nil {
		httpx.WriteDetail(w, http.StatusBadRequest, err.Error())
		return
	}
	doc, err := c.Answer(q, client)
	if err != nil {
		httpx.Internal(w, r, logger, "answering check", err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteBody(w, "application/json", doc)
}
