// Package gossip is an observer's place in the federation: a libp2p host with its own Ed25519
// identity (derived from the node's seed), connected only to the configured peers of
// allow-listed observers; GossipSub topics for signed heads, signed observation digests and
// equivocation evidence; and request/response protocols for a peer's latest head, proofs,
// labels, its observer descriptor and cosigning.
//
// Nothing here decides what a peer's data means. Validators only check that a message is
// well formed, signed by an allow-listed observer and not stale, with pure functions of the
// message and in-memory state (no I/O), and hand what passes to the node's callbacks. A
// peer's observation counts only once the node has proven its label included under a head it
// verified; this package fetches the proofs, the node judges them.
//
// Messages carry no libp2p author or envelope signature (StrictNoSign): each payload is
// already signed by an observer's log key, and forwarders are scored by what they forward.
// GossipSub alone does not heal a partition (messages published while peers were apart are
// never re-sent), so every node republishes its latest head periodically and pulls each
// federation peer's latest head when it connects.
package gossip
