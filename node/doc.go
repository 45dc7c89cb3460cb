// Package node runs one histor observer: it owns the node's data
// directory, loads (or creates) its seed, opens the Merkle log and serves it
// over HTTP in two shapes at once — HISTOR's JSON API under /api/v1/ (the
// same paths, member names and status codes as the first HISTOR, so both
// implementations can be read by the same clients) and the C2SP
// tlog-tiles/tlog-checkpoint resources under /log/, so any standard tlog
// client can check the tree without trusting this code.
//
// Every handler is a read; writes reach the log through the log package's
// sequencer, never through HTTP.
//
// The node opens its parts in order and closes them in reverse (parts.go)
// and mounts their routes in one table (routes.go). Parts that are packages
// of their own, each with a Config, Open or New, Close and Routes, reading
// what they need through interfaces they define:
//
//	node/schedule  the crawl schedule and the crawls the operator starts
//	node/pkgruns   the sandbox part: package runs scheduled, recorded, viewed
//	node/catalog   the crawl's read model, in memory
//	node/views     the view types the API, the desk and the agents share
//	node/readapi   the reading API: servers, changes, stats, badges, feed
//	node/logapi    the label log's routes: issuer, heads, entries, proofs, labels, evidence, tiles
//	node/check     POST /api/v1/check
//	node/desk      the desk: its HTML pages, their handlers and static files
//	node/receipts  the receipts log
//	node/notify    security events, their feeds, webhook delivery
//	node/aimarket  the AIMarket peer: .well-known, manifest, search, invoke
//	node/mcpface   the MCP face at /mcp
//	node/federation the witness, its submitter, gossip, mirror and peer-view
//	               upkeep, the members list, the loops between them
//	node/mirror    verified mirrors of the peers' logs
//	node/peers     the peer view derived from the mirrors
//	node/audit     auditing a log from the outside
//
// What stays in this package: the lifecycle that opens and closes the
// parts in order (parts.go) and the route table that mounts them, with the
// thin adapters each part's interfaces need.
package node
