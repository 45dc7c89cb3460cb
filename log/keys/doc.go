// Package keys holds a node's one secret, a 32-byte seed kept in a file of
// mode 0600, and derives every key the node signs with from it.
//
// Each purpose (log signing, witness cosigning, libp2p identity) gets its own
// Ed25519 key through HKDF-SHA256 with a distinct label, so a signature made
// for one purpose can never be presented as one made for another, and a
// leaked derived key does not reveal the seed or its siblings.
//
// The package also writes the public halves in the forms other software
// reads: C2SP signed-note verifier keys (type 0x01) and cosignature/v1
// verifier keys (type 0x04).
package keys
