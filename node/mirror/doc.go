// Package mirror keeps a verified copy of other observers' logs: the peer view of the
// federation is read out of it.
//
// For each observer it follows, a Store holds the observer's newest checkpoint it verified
// (signed by the observer's key, which its did:key names), every entry of the tree up to
// that checkpoint, the tree's stored hashes, and an index of the observer's observations:
// per server, the tool-set-observation label latest in the observer's log order. Entries are
// read by C2SP tlog-tiles (entry bundles and hash tiles) from any Source: the observer
// itself, a peer that mirrors it, over HTTP or a libp2p stream. A source is never trusted:
// every bundle is checked against the hashes of the signed checkpoint before anything of it
// is written, so a source that serves forged, reordered, truncated or oversized bytes is
// refused with a *SourceError naming what it did, and nothing of it enters the mirror.
//
// A newer checkpoint is adopted only once a consistency proof, read from the new tree's hash
// tiles, joins it to the one the mirror holds; two checkpoints that cannot be one tree are a
// *ForkError carrying a format equivocation bundle. A crash at any byte leaves the mirror at
// the last committed bundle (one Pebble batch: entries, stored hashes, index and progress),
// and the next Sync resumes from there. What is fully mirrored is served again (Checkpoint,
// Tile, Evidence), so an observer is still readable through any node that mirrors it.
//
// A label's server id is its server name with the endpoint its subject descriptor names
// (MTL/1); the descriptor is content-addressed evidence, fetched once per subject from a
// source, checked against its SRI and kept here, so it is served again too.
package mirror
