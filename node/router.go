package node

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Route is one entry of the node's HTTP route table (routeTable). The
// dispatcher serves only what the table lists, so the table is the API.
type Route struct {
	// Pattern is the path. A segment "{name}" matches one non-empty path
	// segment; a last segment "{name...}" matches the rest of the path,
	// "/" and empty segments included (evidence addresses are standard
	// base64). Handlers read both with r.PathValue(name). When two patterns
	// match a path, the one with a literal segment where the other has a
	// variable wins ("/log/tile/entries/{N...}" over "/log/tile/{L}/{N...}").
	// The pattern is also the route's metrics label.
	Pattern string
	// Methods the route answers. GET implies HEAD. Several entries may share
	// a pattern with different methods (POST and OPTIONS, say); a method
	// none of them lists is answered 405 with Allow.
	Methods []string

	serve func(a *api, w http.ResponseWriter, r *http.Request)
	// unbounded routes are served beyond MaxInFlight: liveness probes and
	// metric scrapes must get through while the node is busy.
	unbounded bool
}

// Routes lists the route table in its order, for documentation and for
// checking the OpenAPI document against what is served.
func Routes() []Route {
	out := make([]Route, len(routeTable))
	for i, rt := range routeTable {
		out[i] = Route{Pattern: rt.Pattern, Methods: slices.Clone(rt.Methods)}
	}
	return out
}

// segment kinds, least specific first.
const (
	segRest  = iota // {name...}
	segParam        // {name}
	segLit
)

type segment struct {
	kind int
	text string // the literal, or the parameter's name
	// suffix is a literal a parameter's segment ends with ("{id}.svg"); the
	// parameter's value is the segment without it, never empty.
	suffix string
}

// compiledRoute is every table entry of one pattern.
type compiledRoute struct {
	pattern string
	segs    []segment
	byMeth  map[string]*Route
	allow   string // the Allow header for a method it does not answer
	// unbounded: every entry of the pattern is.
	unbounded bool
}

// compiledRoutes is routeTable ready to match, one entry per pattern.
var compiledRoutes = compileRoutes(routeTable)

func compileRoutes(table []Route) []*compiledRoute {
	var out []*compiledRoute
	byPattern := map[string]*compiledRoute{}
	for i := range table {
		rt := &table[i]
		c := byPattern[rt.Pattern]
		if c == nil {
			c = &compiledRoute{pattern: rt.Pattern, segs: parsePattern(rt.Pattern), byMeth: map[string]*Route{}, unbounded: true}
			byPattern[rt.Pattern] = c
			out = append(out, c)
		}
		c.unbounded = c.unbounded && rt.unbounded
		for _, m := range rt.Methods {
			c.add(m, rt)
			if m == http.MethodGet {
				c.add(http.MethodHead, rt)
			}
		}
	}
	return out
}

func (c *compiledRoute) add(method string, rt *Route) {
	if _, dup := c.byMeth[method]; dup {
		if method == http.MethodHead {
			return // an explicit HEAD entry and a GET entry: the first wins
		}
		panic(fmt.Sprintf("node: route %s %s listed twice", method, c.pattern))
	}
	c.byMeth[method] = rt
	if c.allow != "" {
		c.allow += ", "
	}
	c.allow += method
}

// parsePattern splits a pattern into segments; a malformed one is a bug in
// the table, found by the first test that loads the package.
func parsePattern(p string) []segment {
	if p == "/" {
		return nil // the root only (match)
	}
	if !strings.HasPrefix(p, "/") {
		panic("node: route pattern " + p + " must start with /")
	}
	parts := strings.Split(p[1:], "/")
	segs := make([]segment, len(parts))
	for i, s := range parts {
		switch {
		case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "...}") && i == len(parts)-1:
			segs[i] = segment{kind: segRest, text: s[1 : len(s)-4]}
		case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") && !strings.Contains(s, "..."):
			segs[i] = segment{kind: segParam, text: s[1 : len(s)-1]}
		case strings.HasPrefix(s, "{") && strings.Count(s, "{") == 1 && strings.Count(s, "}") == 1:
			name, suffix, _ := strings.Cut(s[1:], "}")
			if name == "" || strings.Contains(name, "...") {
				panic("node: malformed route pattern " + p)
			}
			segs[i] = segment{kind: segParam, text: name, suffix: suffix}
		case s != "" && !strings.ContainsAny(s, "{}"):
			segs[i] = segment{kind: segLit, text: s}
		default:
			panic("node: malformed route pattern " + p)
		}
	}
	return segs
}

// maxParams bounds the variables of one pattern.
const maxParams = 4

type pathParams struct {
	n    int
	name [maxParams]string
	val  [maxParams]string
}

// match reports whether path is one of c's, collecting its variables.
func (c *compiledRoute) match(path string, ps *pathParams) bool {
	ps.n = 0
	if len(c.segs) == 0 {
		return path == "/"
	}
	if !strings.HasPrefix(path, "/") {
		return false
	}
	rest := path[1:]
	for i, s := range c.segs {
		if s.kind == segRest {
			return ps.add(s.text, rest)
		}
		seg, tail, more := strings.Cut(rest, "/")
		switch {
		case s.kind == segLit && seg != s.text, s.kind == segParam && len(seg) <= len(s.suffix):
			return false
		case s.kind == segParam && !strings.HasSuffix(seg, s.suffix):
			return false
		case s.kind == segParam && !ps.add(s.text, seg[:len(seg)-len(s.suffix)]):
			return false
		}
		if i == len(c.segs)-1 {
			return !more
		}
		if !more {
			return false
		}
		rest = tail
	}
	return false
}

func (ps *pathParams) add(name, val string) bool {
	if ps.n == maxParams {
		return false
	}
	ps.name[ps.n], ps.val[ps.n] = name, val
	ps.n++
	return true
}

// moreSpecific reports whether c beats o for a path both match: at the
// first segment where their kinds differ, c's is the more literal.
func (c *compiledRoute) moreSpecific(o *compiledRoute) bool {
	for i := 0; i < len(c.segs) && i < len(o.segs); i++ {
		if c.segs[i].kind != o.segs[i].kind {
			return c.segs[i].kind > o.segs[i].kind
		}
	}
	return len(c.segs) > len(o.segs)
}

// lookupRoute finds the route of r's path and sets its path values; nil
// when none matches.
func lookupRoute(r *http.Request) *compiledRoute {
	var best *compiledRoute
	var bestPs, ps pathParams
	for _, c := range compiledRoutes {
		if c.match(r.URL.Path, &ps) && (best == nil || c.moreSpecific(best)) {
			best, bestPs = c, ps
		}
	}
	for i := range bestPs.n {
		r.SetPathValue(bestPs.name[i], bestPs.val[i])
	}
	return best
}

// serve answers r by route rt (nil: no route matched), the common headers
// first.
func (a *api) serve(w http.ResponseWriter, r *http.Request, rt *compiledRoute) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	if rt == nil {
		h.Set("Access-Control-Allow-Origin", "*")
		a.fail(w, http.StatusNotFound, "not found")
		return
	}
	entry := rt.byMeth[r.Method]
	if entry == nil {
		h.Set("Allow", rt.allow)
		a.fail(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	// Everything served is public and needs no credentials; any origin may
	// read it (the operator's routes check their token whatever the origin).
	h.Set("Access-Control-Allow-Origin", "*")
	entry.serve(a, w, r)
}

// ServeHTTP routes r through the route table. It routes by hand rather than
// through http.ServeMux: evidence addresses are standard base64 and may
// hold "/" and "//", which the mux would clean and redirect, and the tile
// paths need strict parsing anyway.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.serve(w, r, lookupRoute(r))
}
