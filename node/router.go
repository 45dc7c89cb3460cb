package node

import (
	"net/http"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/notify"
)

// Route is one entry of the node's HTTP route table.
type Route = httpx.Route

// apiRoute is an entry of routeTable: a route and its handler on *api, or
// a part's routes mounted at that place in the table.
type apiRoute struct {
	Pattern string
	Methods []string
	serve   func(a *api, w http.ResponseWriter, r *http.Request)
	// unbounded routes are served beyond MaxInFlight: liveness probes and
	// metric scrapes must get through while the node is busy.
	unbounded bool
	// mount, when set, is a part's own routes, listed here in their order;
	// the entry has nothing else. They are bound to the part a holds when
	// the router is built.
	mount func(a *api) []Route
}

// routes is the node's route table with every handler bound to a.
func (a *api) routes() []Route {
	out := make([]Route, 0, len(routeTable))
	for _, e := range routeTable {
		if e.mount != nil {
			out = append(out, e.mount(a)...)
			continue
		}
		out = append(out, Route{Pattern: e.Pattern, Methods: e.Methods, Unbounded: e.unbounded,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { e.serve(a, w, r) })})
	}
	return out
}

// notifyRoutes are the notifications part's routes (node/notify): they read
// the part, the deliverer and the public base as each request comes.
func (a *api) notifyRoutes() []Route {
	return notify.Routes(notify.Mount{
		Part:     func() *notify.Part { return a.events },
		Webhooks: func() *notify.Webhooks { return a.webhooks },
		PublicBase: func() string {
			if rd := a.read.Load(); rd != nil {
				return rd.PublicBase
			}
			return ""
		},
		FeedTime: func() string {
			if rd := a.read.Load(); rd != nil {
				return catalog.FormatTime(rd.now())
			}
			return ""
		},
		Authorize: a.authorizeOperator,
		Logger:    a.logger,
	})
}

// Routes lists the route table in its order, for documentation and for
// checking the OpenAPI document against what is served.
func Routes() []Route { return httpx.NewRouter((&api{}).routes()).Routes() }

// serve answers r by route m (nil: no route matched), the common headers
// first.
func (a *api) serve(w http.ResponseWriter, r *http.Request, m *httpx.Match) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	if m == nil {
		h.Set("Access-Control-Allow-Origin", "*")
		a.fail(w, http.StatusNotFound, "not found")
		return
	}
	handler, allow := m.Handler(r.Method)
	if handler == nil {
		h.Set("Allow", allow)
		a.fail(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	// Everything served is public and needs no credentials; any origin may
	// read it (the operator's routes check their token whatever the origin).
	h.Set("Access-Control-Allow-Origin", "*")
	handler.ServeHTTP(w, r)
}

// ServeHTTP routes r through the route table.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.serve(w, r, a.router.Lookup(r))
}
