package node

import (
	"errors"
	"net/http"
	"time"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/catalog"
)

// ReadAPI is what the reading API serves from: /api/v1/servers, changes,
// stats and badges, /badge/<id>.svg and /feed.xml. Without one those routes
// answer 503.
type ReadAPI struct {
	// Catalog is the read model of the crawl. Required.
	Catalog *catalog.Catalog
	// PublicBase is the absolute URL the feed's links start with, e.g.
	// "https://observer.example.org". "" uses http://<the request's Host>.
	PublicBase string
	// CrawlInterval is reported by /api/v1/stats (crawl.intervalSeconds)
	// and ages the sth badge; 0 when the node does not crawl.
	CrawlInterval time.Duration
	// Now is the clock of badges and "since" windows. Default time.Now.
	Now func() time.Time
}

func (r *ReadAPI) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

// SetReadAPI serves the reading API from r. The log must be open (Open);
// a node closed and opened again needs it set again.
func (n *Node) SetReadAPI(r ReadAPI) error {
	if r.Catalog == nil {
		return errors.New("setting read API: Catalog is required")
	}
	a := n.api.Load()
	if a == nil {
		return errors.New("setting read API: log not open")
	}
	a.setReadAPI(&r)
	return nil
}

func (a *api) setReadAPI(r *ReadAPI) { a.read.Store(r) }

// writeJSON answers v as JSON without HTML escaping.
func (a *api) writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	httpx.WriteJSON(w, r, a.logger, v)
}
