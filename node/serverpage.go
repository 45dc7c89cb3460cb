package node

import (
	"net/http"
	"time"

	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/views"
)

// serveServer answers /api/v1/servers/<id>.
func (a *api) serveServer(w http.ResponseWriter, r *http.Request, id string) {
	rd := a.reader(w)
	if rd == nil {
		return
	}
	s := views.ServerByID(rd.Catalog, id)
	if s == nil {
		a.fail(w, http.StatusNotFound, "unknown server")
		return
	}
	b, err := a.serverRecord(rd.Catalog, s, rd.now())
	if err != nil {
		a.internal(w, r, "reading server", err)
		return
	}
	writeBody(w, "application/json", b)
}

// serverRecord is the /api/v1/servers/<id> answer for s (also the MCP
// face's server tool).
func (a *api) serverRecord(c *catalog.Catalog, s *catalog.Server, now time.Time) ([]byte, error) {
	return views.ServerRecord(c, s, now, a.viewSources())
}
