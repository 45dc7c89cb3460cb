// Package federation is the node's place among its peers: the witness that cosigns the
// logs it knows and keeps equivocation evidence, the submitter that collects cosignatures
// of the node's own checkpoints, the gossip host, the mirrors of the other observers'
// logs, the peer view derived from them, and the loops between these and the node's log
// (heads to the witnesses and to gossip, peers' heads checked for consistency, evidence
// kept and gossiped). It also holds the members list (the flags and the members file) and
// its reload, the observer descriptor, and the routes of the cosigned checkpoint, the
// mirrors, the witness and the evidence.
//
// The node opens Parts in order after its log and closes them in reverse; the
// federation reads the node only through Config and Log, and its routes only through
// Mount. The lower pieces are packages of their own: witness, gossip, node/mirror and
// node/peers.
package federation
