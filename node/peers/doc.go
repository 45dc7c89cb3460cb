// Package peers is the node's view of what the other observers of the federation saw: a
// store of their observation digests that counts one only once it is proven, and the
// agreement between observers that /check and the server answers report.
//
// A peer's observation (a gossip/wire observation digest) counts only once its label is
// proven included under a head of that observer's log: Store.Add takes the signed digest,
// the label as the observer's log holds it, an inclusion proof and the observer's signed
// histor.sth/v1 head, checks every one of them against the observer's key (which its did:key
// names) and refuses anything else with an error wrapping one of the Err values. The label
// must say what the digest claims: the same id, issuer and server (server id = the label's
// server name with the digest's endpoint), and for a digest its tool-set digest and its
// observedAt. A status digest ("no tool set was read") claims only what its observer signed;
// its label proves that the observer had observed the server, not the status.
//
// Per server id the store keeps each observer's latest proven observation, ordered by
// observedAt; this node's own observations (Own, from its crawl state and its log) go through
// the same Add and are one observer among the others.
//
// # Agreement
//
// An observation holds from its observedAt (for a digest, when its observer first saw that
// tool set: the observation label is issued once per new set) until the same observer's next
// proven observation of the server replaces it. The store keeps only the latest observation
// of each observer, so every kept observation is open: any two kept observations overlap in
// time. Agreement over a server's kept observations that carry a digest:
//
//   - unobserved: none (no observer, or only status observations);
//   - single-observer: exactly one;
//   - unanimous: two or more, all with one digest;
//   - split: two or more with different digests, because two observers hold at the same
//     moment that the endpoint serves different tool definitions.
//
// A split is also what a change looks like while it spreads: between one observer's crawl
// that sees a new set and another's that has not yet, the two disagree for up to one crawl
// interval. A split that outlasts every observer's crawl interval is the one worth reading.
// An observer that stops publishing keeps its last word; the store judges what was proven,
// not who is still running.
package peers
