// Package httpxtest serves route tables in the tests of the parts that mount them.
package httpxtest

import (
	"net/http"

	"github.com/histor-observer/histor/internal/httpx"
)

// Serve answers through routes as the node's router does: 404 for a path they do not list,
// 405 with Allow for a method a route does not answer.
func Serve(routes []httpx.Route) http.Handler {
	rt := httpx.NewRouter(routes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := rt.Lookup(r)
		if m == nil {
			httpx.WriteDetail(w, http.StatusNotFound, "not found")
			return
		}
		h, allow := m.Handler(r.Method)
		if h == nil {
			w.Header().Set("Allow", allow)
			httpx.WriteDetail(w, http.StatusMethodNotAllowed, "method not allowed")
			return
		}
		h.ServeHTTP(w, r)
	})
}
