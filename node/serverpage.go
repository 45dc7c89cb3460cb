package node

import (
	"time"

	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/views"
)

// serverRecord is the /api/v1/servers/<id> answer for s (also the MCP
// face's server tool).
func (a *api) serverRecord(c *catalog.Catalog, s *catalog.Server, now time.Time) ([]byte, error) {
	return views.ServerRecord(c, s, now, a.viewSources())
}
