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
package node
