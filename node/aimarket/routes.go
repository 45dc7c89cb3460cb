package aimarket

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/log/receipt"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/check"
)

// Model is the read model the server and changes capabilities answer
// from, as one request reads it.
type Model struct {
	// Catalog is the read model of the crawl. Required.
	Catalog *catalog.Catalog
	// Now is the clock of the server summaries. Required.
	Now func() time.Time
}

// Mount is what the peer's routes read of the node, at every request: the
// routes are made before the node opens its parts.
type Mount struct {
	// Peer is the peer now; nil (or a nil Peer) answers every route 503.
	Peer func() *Peer
	// Checker answers histor.check@v1; nil, or an unavailable Checker,
	// answers it 503.
	Checker func() *check.Checker
	// Model is the read model now; nil (or a nil Model) answers the server
	// and changes capabilities 503.
	Model func() *Model
	// Logger receives the failures answered 500; nil: slog.Default().
	Logger *slog.Logger
}

// Routes are the peer's routes, in the order the node lists them.
func Routes(m Mount) []httpx.Route {
	return []httpx.Route{
		{Pattern: "/.well-known/ai-market.json", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveWellKnown)},
		{Pattern: "/ai-market/v2/manifest", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveManifest)},
		{Pattern: "/ai-market/v2/search", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveSearch)},
		{Pattern: "/ai-market/v2/invoke", Methods: []string{http.MethodPost, http.MethodOptions}, Handler: http.HandlerFunc(m.serveInvoke)},
	}
}

// peer is the peer now, answering 503 itself when there is none.
func (m Mount) peer(w http.ResponseWriter) *Peer {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	var p *Peer
	if m.Peer != nil {
		p = m.Peer()
	}
	if p == nil {
		httpx.WriteDetail(w, http.StatusServiceUnavailable, "this node has no AIMarket peer")
	}
	return p
}

// checker is the checker now; nil when there is none.
func (m Mount) checker() *check.Checker {
	if m.Checker == nil {
		return nil
	}
	return m.Checker()
}

// model is the read model now; nil when there is none.
func (m Mount) model() *Model {
	if m.Model == nil {
		return nil
	}
	return m.Model()
}

// internal logs a failure and answers 500 without its details.
func (m Mount) internal(w http.ResponseWriter, r *http.Request, doing string, err error) {
	logger := m.Logger
	if logger == nil {
		logger = slog.Default()
	}
	httpx.Internal(w, r, logger, doing, err)
}

// writePy answers doc as PyJSON (compact).
func (m Mount) writePy(w http.ResponseWriter, r *http.Request, doc any) {
	body, err := receipt.PyJSON(doc, receipt.Compact)
	if err != nil {
		m.internal(w, r, "encoding an AIMarket answer", err)
		return
	}
	httpx.WriteBody(w, "application/json", body)
}

// serveWellKnown answers /.well-known/ai-market.json, signed whole.
func (m Mount) serveWellKnown(w http.ResponseWriter, r *http.Request) {
	p := m.peer(w)
	if p == nil {
		return
	}
	doc, err := p.wellKnown(p.baseURL(r))
	if err != nil {
		m.internal(w, r, "signing .well-known", err)
		return
	}
	w.Header().Set("Cache-Control", cacheDoc)
	m.writePy(w, r, doc)
}

// serveManifest answers /ai-market/v2/manifest, signed over the hub's
// manifest canonical.
func (m Mount) serveManifest(w http.ResponseWriter, r *http.Request) {
	p := m.peer(w)
	if p == nil {
		return
	}
	doc, err := p.manifest(p.baseURL(r))
	if err != nil {
		m.internal(w, r, "signing the manifest", err)
		return
	}
	w.Header().Set("Cache-Control", cacheDoc)
	m.writePy(w, r, doc)
}

// serveSearch answers /ai-market/v2/search?q=: the capabilities whose id,
// or lowercased description, holds the lowercased q.
func (m Mount) serveSearch(w http.ResponseWriter, r *http.Request) {
	p := m.peer(w)
	if p == nil {
		return
	}
	q := httpx.String{Name: "q"}
	if err := httpx.ReadStrings(r.URL.RawQuery, &q); err != nil {
		httpx.WriteDetail(w, http.StatusBadRequest, err.Error())
		return
	}
	needle := strings.TrimSpace(strings.ToLower(q.Value))
	found := []any{}
	for _, t := range p.tools(p.baseURL(r)) {
		c := t.(map[string]any)
		id, desc := c["capability_id"].(string), strings.ToLower(c["description"].(string))
		if needle == "" || strings.Contains(id, needle) || strings.Contains(desc, needle) {
			found = append(found, c)
		}
	}
	m.writePy(w, r, map[string]any{"total": len(found), "tools": found})
}

// serveInvoke answers POST /ai-market/v2/invoke and its CORS preflight.
func (m Mount) serveInvoke(w http.ResponseWriter, r *http.Request) {
	p := m.peer(w)
	if p == nil {
		return
	}
	if r.Method == http.MethodOptions {
		h := w.Header()
		h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Content-Type")
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	call, err := p.readInvoke(w, r)
	var result any
	if err == nil {
		result, err = m.invoke(p, call)
	}
	var reply map[string]any
	if err == nil {
		reply, err = p.invokeReply(result, call.capability, call.input)
	}
	var ie *invokeError
	switch {
	case errors.As(err, &ie):
		httpx.WriteDetail(w, ie.status, ie.detail)
	case err != nil:
		m.internal(w, r, "answering an invoke", err)
	default:
		w.Header().Set("Cache-Control", "no-store")
		m.writePy(w, r, reply)
	}
}
