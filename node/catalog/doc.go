// Package catalog is the node's read model of the crawl: every target the
// registry listed, with its latest observation, held in memory with the
// indexes the reading API and /check need, and read through to the crawl
// state and the log for the per-target detail (labels, timeline, changes,
// client reports, tool sets, descriptors, pattern matches).
//
// A Catalog is loaded from a *state.Store by New, rebuilt whole by Reload,
// and brought up to date by Update with the targets a commit wrote (a
// crawl's or a package run's Summary.Committed), which the node calls after
// each: Update reads those targets again and keeps every other server as it
// was. Either builds a new immutable snapshot and swaps it in atomically, so
// readers never lock and never see half a load; what is read through
// (labels, changes, timeline) is always as fresh as the store.
//
// Lookups for other parts of the node (POST /api/v1/check above all):
//
//   - ByID(id): one target by its server id (mtl.ServerID), delisted ones too.
//   - ByEndpoint(endpoint), ByName(name): every target with that endpoint or
//     registry name, listed ones first, as HISTOR's store.targets_by orders
//     them; Lookup(endpoint, name) picks the one /check reports.
//   - NormalizeEndpoint: the endpoint form the lookups compare, HISTOR's.
//   - ToolSetSeen(id, digest): when and how often a tool-set digest was
//     observed at a target, HISTOR's store.toolset_seen shape.
//   - LabelTarget(labelID): the target a label was issued for.
//   - AddClientReport: a /check contribution, written to the store and
//     counted in the snapshot's statistics at once.
package catalog
