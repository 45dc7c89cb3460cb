// Package awr reads and writes AWR/2 documents: did:key identifiers for
// Ed25519 keys, eddsa-jcs-2022 Data Integrity proofs over RFC 8785 bytes,
// and the MTL/1 label documents (VerificationVerdict + MCPTrustLabel) a
// histor node issues, one per observation method.
//
// Everything here must agree byte for byte with the first HISTOR observer
// and the AWR/2 reference implementation, so canonical JSON always comes
// from package canon and verification refuses anything it does not fully
// understand rather than skipping it.
package awr
