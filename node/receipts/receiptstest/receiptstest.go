// Package receiptstest holds what tests of the receipts log share, in node/receipts and in
// the node that mounts it: keys from a label, receipt digests, signed anchor bodies, and a
// head checked as an outsider would.
package receiptstest

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/receipt"
)

// Key is the Ed25519 key whose seed is the SHA-256 of label: the same key in every test.
func Key(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte(label))
	return ed25519.NewKeyFromSeed(seed[:])
}

// DID is k's did:key.
func DID(k ed25519.PrivateKey) string { return awr.DIDKey(k.Public().(ed25519.PublicKey)) }

// Digest is the SRI of receipt n, a distinct receipt digest for each n.
func Digest(n int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "receipt-%d", n))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// Anchor is digest anchored by key at at, the document an issuer submits.
func Anchor(t testing.TB, key ed25519.PrivateKey, digest string, at time.Time) json.RawMessage {
	t.Helper()
	doc, err := receipt.SignAnchor(key, digest, at)
	if err != nil {
		t.Fatalf("signing the anchor of %s: %v", digest, err)
	}
	return doc
}

// Body is the submission of anchors: {"anchors":[…]}.
func Body(anchors ...json.RawMessage) []byte {
	b, err := json.Marshal(map[string]any{"anchors": anchors})
	if err != nil {
		panic(err) // RawMessages that do not marshal are a broken test
	}
	return b
}

// STH is a receipts head as served.
type STH struct {
	Type      string `json:"type"`
	Log       string `json:"log"`
	TreeSize  uint64 `json:"treeSize"`
	RootHash  string `json:"rootHash"`
	Timestamp string `json:"timestamp"`
	Signature struct {
		Alg, VerificationMethod, Value string
	} `json:"signature"`
}

// VerifySTH checks a receipts head as an outsider would: its type, its log member did, and
// its signature under that did:key over the documented signed bytes written out by hand (the
// JCS of every member but signature, in sorted order). The test fails when any does not hold.
func VerifySTH(t testing.TB, doc []byte, did string) STH {
	t.Helper()
	var s STH
	if err := json.Unmarshal(doc, &s); err != nil {
		t.Fatalf("head %s: %v", doc, err)
	}
	if s.Type != "histor.receipts-sth/v1" || s.Log != did {
		t.Fatalf("head type %q log %q, want histor.receipts-sth/v1 by %s", s.Type, s.Log, did)
	}
	msg := fmt.Sprintf(`{"log":"%s","rootHash":"%s","timestamp":"%s","treeSize":%d,"type":"histor.receipts-sth/v1"}`,
		s.Log, s.RootHash, s.Timestamp, s.TreeSize)
	sig, err := base64.RawURLEncoding.DecodeString(s.Signature.Value)
	pub, perr := awr.ParseDIDKey(s.Log)
	if err != nil || perr != nil || !ed25519.Verify(pub, []byte(msg), sig) {
		t.Fatalf("head signature does not verify over %s", msg)
	}
	return s
}
