package httpx

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Route is one entry of a route table. A Router serves only what its table lists, so the
// table is the API.
type Route struct {
	// Pattern is the path. A segment "{name}" matches one non-empty path segment, and
	// "{name}.svg" one that ends so (the value is the segment without the suffix, never
	// empty); a last segment "{name...}" matches the rest of the path, "/" and empty
	// segments included (evidence addresses are standard base64). Handlers read both with
	// r.PathValue(name). When two patterns match a path, the one with a literal segment where
	// the other has a variable wins ("/log/tile/entries/{N...}" over "/log/tile/{L}/{N...}").
	// The pattern is also the route's metrics label.
	Pattern string
	// Methods the route answers. GET implies HEAD. Several entries may share a pattern with
	// different methods (POST and OPTIONS, say); a method none of them lists is answered
	// 405 with Allow.
	Methods []string
	// Unbounded routes are served beyond the in-flight bound: liveness probes and metric
	// scrapes must get through while the server is busy.
	Unbounded bool
	// Handler answers the route; nil in a listing.
	Handler http.Handler
}

// GetOnly is the method list of a read-only route (GET, and so HEAD).
var GetOnly = []string{http.MethodGet}

// Router matches requests against a route table. It routes by hand rather than through
// http.ServeMux: evidence addresses are standard base64 and may hold "/" and "//", which
// the mux would clean and redirect, and tile paths need strict parsing anyway.
type Router struct {
	table    []Route
	patterns []*Match
}

// NewRouter compiles table. A malformed pattern or a method listed twice for one pattern is
// a bug in the table: NewRouter panics, so the first test that builds it finds it.
func NewRouter(table []Route) *Router {
	rt := &Router{table: slices.Clone(table)}
	byPattern := map[string]*Match{}
	for i := range rt.table {
		e := &rt.table[i]
		m := byPattern[e.Pattern]
		if m == nil {
			m = &Match{Pattern: e.Pattern, segs: parsePattern(e.Pattern), byMeth: map[string]*Route{}, Unbounded: true}
			byPattern[e.Pattern] = m
			rt.patterns = append(rt.patterns, m)
		}
		m.Unbounded = m.Unbounded && e.Unbounded
		for _, meth := range e.Methods {
			m.add(meth, e)
			if meth == http.MethodGet {
				m.add(http.MethodHead, e)
			}
		}
	}
	return rt
}

// Routes lists the table in its order, without handlers, for documentation and for
// checking a description of the API against what is served.
func (rt *Router) Routes() []Route {
	out := make([]Route, len(rt.table))
	for i, e := range rt.table {
		out[i] = Route{Pattern: e.Pattern, Methods: slices.Clone(e.Methods), Unbounded: e.Unbounded}
	}
	return out
}

// Match is every table entry of one pattern.
type Match struct {
	// Pattern is the matched pattern, the request's metrics label.
	Pattern string
	// Unbounded: every entry of the pattern is.
	Unbounded bool

	segs   []segment
	byMeth map[string]*Route
	allow  string // the Allow header for a method it does not answer
}

func (m *Match) add(method string, e *Route) {
	if _, dup := m.byMeth[method]; dup {
		if method == http.MethodHead {
			return // an explicit HEAD entry and a GET entry: the first wins
		}
		panic(fmt.Sprintf("httpx: route %s %s listed twice", method, m.Pattern))
	}
	m.byMeth[method] = e
	if m.allow != "" {
		m.allow += ", "
	}
	m.allow += method
}

// Handler is the handler of method; nil, with the Allow header's value, when the pattern
// does not answer it.
func (m *Match) Handler(method string) (h http.Handler, allow string) {
	if e := m.byMeth[method]; e != nil {
		return e.Handler, ""
	}
	return nil, m.allow
}

// Lookup finds the route of r's path and sets its path values; nil when none matches.
func (rt *Router) Lookup(r *http.Request) *Match {
	var best *Match
	var bestPs, ps pathParams
	for _, m := range rt.patterns {
		if m.match(r.URL.Path, &ps) && (best == nil || m.moreSpecific(best)) {
			best, bestPs = m, ps
		}
	}
	for i := range bestPs.n {
		r.SetPathValue(bestPs.name[i], bestPs.val[i])
	}
	return best
}

// segment kinds, least specific first.
const (
	segRest  = iota // {name...}
	segParam        // {name}
	segLit
)

type segment struct {
	kind   int
	text   string // the literal, or the parameter's name
	suffix string // a literal a parameter's segment ends with ("{id}.svg")
}

func parsePattern(p string) []segment {
	if p == "/" {
		return nil // the root only (match)
	}
	if !strings.HasPrefix(p, "/") {
		panic("httpx: route pattern " + p + " must start with /")
	}
	parts := strings.Split(p[1:], "/")
	segs := make([]segment, len(parts))
	for i, s := range parts {
		switch {
		case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "...}") && i == len(parts)-1:
			segs[i] = segment{kind: segRest, text: s[1 : len(s)-4]}
		case len(s) > 2 && strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") && !strings.ContainsAny(s[1:len(s)-1], "{}."):
			segs[i] = segment{kind: segParam, text: s[1 : len(s)-1]}
		case strings.HasPrefix(s, "{") && strings.Count(s, "{") == 1 && strings.Count(s, "}") == 1:
			name, suffix, _ := strings.Cut(s[1:], "}")
			if name == "" || strings.Contains(name, "...") {
				panic("httpx: malformed route pattern " + p)
			}
			segs[i] = segment{kind: segParam, text: name, suffix: suffix}
		case s != "" && !strings.ContainsAny(s, "{}"):
			segs[i] = segment{kind: segLit, text: s}
		default:
			panic("httpx: malformed route pattern " + p)
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

// match reports whether path is one of m's, collecting its variables.
func (m *Match) match(path string, ps *pathParams) bool {
	ps.n = 0
	if len(m.segs) == 0 {
		return path == "/"
	}
	if !strings.HasPrefix(path, "/") {
		return false
	}
	rest := path[1:]
	for i, s := range m.segs {
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
		if i == len(m.segs)-1 {
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

// moreSpecific reports whether m beats o for a path both match: at the first segment where
// their kinds differ, m's is the more literal.
func (m *Match) moreSpecific(o *Match) bool {
	for i := 0; i < len(m.segs) && i < len(o.segs); i++ {
		if m.segs[i].kind != o.segs[i].kind {
			return m.segs[i].kind > o.segs[i].kind
		}
	}
	return len(m.segs) > len(o.segs)
}
