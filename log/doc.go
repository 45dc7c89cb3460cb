// Package log is the node's append-only Merkle log: an RFC 9162 tree of
// signed labels kept in Pebble (behind kvStore, so tests can run it over a
// memory store that fails chosen calls), with content-addressed evidence
// beside it.
//
// Hashes are stored by C2SP tlog-tiles tile (height 8), one Pebble value per
// tile, so a proof costs a few reads and the tiles can be served as they are.
// One sequencer goroutine groups concurrent appends into batches; each batch
// (entries, evidence, tiles and a newly signed head in both forms) is one
// synced Pebble write, and no caller is answered, and no read reaches past
// the latest head, before it is durable. The next batch is built while the
// previous one's WAL sync runs (group commit).
//
// Every head is kept twice over the same tree: a histor.sth/v1 JSON document
// signed like HISTOR's, and a C2SP tlog-checkpoint signed note.
package log
