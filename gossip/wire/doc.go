// Package wire holds the formats of what observers send each other over the federation's
// GossipSub topics: a head message (a histor.sth/v1 document and the C2SP checkpoint of the
// same tree, with its cosignatures) and a signed observation digest (what one observer saw of
// one server, and where the label saying so sits in its log).
//
// Like log/format, which it builds on, it holds no state, does no I/O and does not import
// libp2p, so a gossip validator, the node's /check answer and an offline verifier share one
// strict parser. Every signed text opens with a type line that no other signed text of a
// HISTOR key has, and every parser refuses all but the one canonical spelling, so one logical
// message has one byte form and one content-addressed ID.
package wire
