// Package format parses and verifies the wire formats of a HISTOR log: its histor.sth/v1 tree
// heads, its C2SP tlog-checkpoint signed notes, the cosignature/v1 lines witnesses add to them,
// RFC 9162 inclusion and consistency proofs, C2SP entry bundles and hash tiles.
//
// It holds no state and never imports the log's store, so every verifier (the auditor, a
// witness, a gossip validator) can check what a log serves with this package alone. Parsers are
// strict: each value has one accepted spelling, and anything else is refused rather than
// repaired, so two parties who accept the same bytes agree on what they mean.
//
// When two signed heads of one log cannot both be true, the check returns an
// *InconsistencyError that keeps both signed heads, as served, and the proof: the evidence a
// third party needs to see the fork without asking the log.
package format
