// Package registry turns the official MCP registry into observation targets.
//
// Harvest reads every page of GET <base>/v0.1/servers?version=latest&limit=100
// and keeps one record per server name; each streamable-http or sse remote of
// that record becomes a Target keyed by HISTOR's server id (log/mtl.ServerID).
// Targets the crawl must not dial are still returned, with a Skip reason, so
// the published numbers account for every listed endpoint instead of quietly
// shrinking the denominator.
//
// A harvest is Complete only when the last page ended without error. Delist
// marks targets that vanished from the registry, and does so only after a
// complete harvest: a registry that failed half-way must never make half the
// world look delisted.
//
// Where this differs from HISTOR's Python harvest, on purpose: entries the
// registry marks deleted are kept with RegistryStatus "deleted" rather than
// dropped, so the crawl can show what moderation removed (whether to dial them
// is the crawl's decision); sse remotes are targets, since our client speaks
// legacy HTTP+SSE; and a cleartext URL is not skipped here, because the
// address guard refuses it at dial time unless private targets are allowed.
// The three-remote cap counts only streamable-http and sse remotes, so a
// stdio or unknown entry cannot crowd out a real one.
//
// Pages are decoded with encoding/json under a byte limit, not with
// log/canon's strict parser. Registry pages are neither digested nor signed;
// what we keep from them is a handful of strings, and one publisher's odd
// number or duplicate member must not cost every other server its target.
// Each server entry is decoded on its own, so a malformed entry is skipped
// (and counted) while the rest of the page stands.
package registry
