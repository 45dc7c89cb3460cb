// Package receipt holds the formats of receipts, so that a hub, an auditor
// or a test can make and check them without a node or a store:
//
//   - the histor.receipt-anchor/v1 documents a hub submits to the receipts
//     log (an AWR/2-style signed document: Ed25519 by the issuer's did:key
//     over the RFC 8785 bytes of every member but signature);
//   - the AIMarket interop receipt and the answer signature a node puts on
//     every /ai-market/v2/invoke reply, and the canonical strings its
//     .well-known document and manifest are signed over. Those strings are
//     the ones HISTOR and the AIMarket hubs compute with Python's
//     json.dumps, so this package carries an encoder that writes exactly
//     what json.dumps writes (PyJSON).
package receipt
