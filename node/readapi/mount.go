// Package readapi is the node's reading API: the routes that answer from
// the crawl's read model (node/catalog) through its views (node/views):
// /api/v1/servers, /api/v1/changes, /api/v1/stats, the badges and
// /feed.xml. It reads the node only through Mount.
package readapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/histor-observer/histor/internal/httpx"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/views"
)

// Model is the read model the routes answer from, as one request reads it.
type Model struct {
	// Catalog is the read model of the crawl. Required.
	Catalog *catalog.Catalog
	// PublicBase is the absolute URL the feed's links start with; ""
	// uses http://<the request's Host>.
	PublicBase string
	// CrawlInterval is reported by /api/v1/stats and ages the sth badge;
	// 0 when the node does not crawl.
	CrawlInterval time.Duration
	// Now is the clock of badges and "since" windows. Required.
	Now func() time.Time
}

// Mount is what the routes read of the node, at every request: the routes
// are made before the node serves any crawl state.
type Mount struct {
	// Model is the read model now; nil (or a nil Model) answers 503.
	Model func() *Model
	// Sources are the peer view and the sandbox's runs now; nil: none.
	Sources func() views.Sources
	// Head is the log's latest head, for the log and sth shields.
	Head func() hlog.Head
	// LogStats is the head /api/v1/log/sth serves, for /api/v1/stats.
	LogStats func() views.LogStats
	// Crawl is the crawl's state for /api/v1/stats, but for its interval
	// (the Model's); nil: the node does not crawl.
	Crawl  func() views.CrawlStats
	Logger *slog.Logger
}

// RecordRoutes are the routes of the records: servers and changes, in the
// order the node lists them.
func RecordRoutes(m Mount) []httpx.Route {
	return []httpx.Route{
		{Pattern: "/api/v1/servers", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveServers)},
		{Pattern: "/api/v1/servers/{target_id}", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveServer)},
		{Pattern: "/api/v1/changes", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveChanges)},
		{Pattern: "/api/v1/changes/{change_id}", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveChange)},
	}
}

// SummaryRoutes are the routes that sum the records up: stats, badges and
// the feed, in the order the node lists them.
func SummaryRoutes(m Mount) []httpx.Route {
	return []httpx.Route{
		{Pattern: "/api/v1/stats", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveStats)},
		{Pattern: "/api/v1/stats/hosts", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveStatsHosts)},
		{Pattern: "/api/v1/badges/{name}", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveShield)},
		{Pattern: "/badge/{target_id}.svg", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveBadgeSVG)},
		{Pattern: "/feed.xml", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveFeed)},
	}
}

// model is the read model now, answering 503 itself when there is none.
func (m Mount) model(w http.ResponseWriter) *Model {
	var md *Model
	if m.Model != nil {
		md = m.Model()
	}
	if md == nil {
		httpx.WriteDetail(w, http.StatusServiceUnavailable, "this node serves no crawl state")
	}
	return md
}

// sources are the server page's other sources now.
func (m Mount) sources() views.Sources {
	if m.Sources == nil {
		return views.Sources{}
	}
	return m.Sources()
}

// head is the log's latest head; the zero head without a log.
func (m Mount) head() hlog.Head {
	if m.Head == nil {
		return hlog.Head{}
	}
	return m.Head()
}
