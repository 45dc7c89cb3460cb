package node

import (
	"net/http"
	"strings"

	"github.com/histor-observer/histor/node/views"
)

// serveBadgeSVG answers /badge/<id>.svg, "not listed" for an unknown id.
func (a *api) serveBadgeSVG(w http.ResponseWriter, r *http.Request, file string) {
	id, ok := strings.CutSuffix(file, ".svg")
	if !ok || id == "" {
		a.fail(w, http.StatusNotFound, "not found")
		return
	}
	rd := a.reader(w)
	if rd == nil {
		return
	}
	s := views.ServerByID(rd.Catalog, id)
	w.Header().Set("Cache-Control", "public, max-age=3600")
	writeBody(w, "image/svg+xml", views.ServerBadge(s, rd.now()))
}

// serveShield answers /api/v1/badges/<name>: log, pinned, changes or sth.
func (a *api) serveShield(w http.ResponseWriter, r *http.Request, name string) {
	rd := a.reader(w)
	if rd == nil {
		return
	}
	in := views.ShieldInputs{Head: a.log.Latest(), CrawlInterval: rd.CrawlInterval, Now: rd.now()}
	sh, ok := views.NamedShield(name, rd.Catalog, in)
	if !ok {
		a.fail(w, http.StatusNotFound, "unknown badge")
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	a.writeJSON(w, r, sh)
}
