package node

import (
	"github.com/histor-observer/histor/node/check"
)

// CheckType is the type member of every /check answer (check.Type).
const CheckType = check.Type

// ContributionsPerClientDay is the most targets one client's contributions
// count for in any 24 hours (check.ContributionsPerClientDay).
const ContributionsPerClientDay = check.ContributionsPerClientDay

// CheckTargets is what /api/v1/check reads about the targets the crawl
// keeps (check.Targets).
type CheckTargets = check.Targets

// CheckTarget is one target as /check reports it (check.Target).
type CheckTarget = check.Target

// SeenBefore is HISTOR's seenBefore member (check.SeenBefore).
type SeenBefore = check.SeenBefore

// ClientReports keeps what contribute:true adds (check.ClientReports).
// *state.Store satisfies it.
type ClientReports = check.ClientReports

// checkConfig is the checker part's configuration: the node's limits and
// identity, and the parts opened before it as the narrow views the part
// takes (the catalog's targets and counts, the crawler's pattern set, the
// peer view).
func (n *Node) checkConfig() check.Config {
	return check.Config{
		Key: n.id.logKey, DID: n.id.did, PublicURL: n.cfg.PublicURL, TrustedProxies: n.cfg.TrustedProxies,
		ChecksPerMinute: n.cfg.ChecksPerMinute, ScansPerHour: n.cfg.ScansPerHour, MaxClients: n.cfg.MaxCheckClients,
		Now: n.cfg.Now, Logger: n.cfg.Logger, Log: n.log,
		Targets:  check.CatalogTargets{Catalog: n.catalog},
		Reports:  check.CatalogReports{Catalog: n.catalog},
		Patterns: n.cr.PatternSet(),
		View:     n.fed.ViewMembers,
	}
}

// checkRoutes are the checker part's routes (node/check), reading a.check
// on every request.
func (a *api) checkRoutes() []Route {
	return check.Routes(func() *check.Checker { return a.check }, a.logger)
}
