package node

import "github.com/histor-observer/histor/node/logapi"

// logMount is what the label log's routes (node/logapi) read of the node:
// the log, the issuer and the entries bound, fixed at start, and the crawl
// state's label targets as each request comes.
func (a *api) logMount() logapi.Mount {
	return logapi.Mount{
		Log:        a.log,
		Issuer:     a.issuer,
		MaxEntries: a.maxEntries,
		Targets: func() logapi.Targets {
			rd := a.read.Load()
			if rd == nil {
				return nil // never a nil *catalog.Catalog in the interface
			}
			return rd.Catalog
		},
		Logger: a.logger,
	}
}

// logRoutes are the label log's JSON routes under /api/v1/.
func (a *api) logRoutes() []Route { return logapi.APIRoutes(a.logMount()) }

// tileRoutes are the label log's C2SP tiles under /log/tile/.
func (a *api) tileRoutes() []Route { return logapi.TileRoutes(a.logMount()) }
