package awr

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/histor-observer/histor/log/canon"
)

// The only proof this package makes or accepts (W3C vc-di-eddsa §3.3).
const (
	ProofType    = "DataIntegrityProof"
	Cryptosuite  = "eddsa-jcs-2022"
	ProofPurpose = "assertionMethod"
)

// timeLayout is RFC 3339 in UTC at second precision, as AWR/2 §3.1 writes
// every timestamp.
const timeLayout = "2006-01-02T15:04:05Z"

// FormatTime writes t the way AWR/2 documents carry timestamps.
func FormatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// proofMembers lists what a proof may carry. Anything else (expires,
// domain, challenge, previousProof…) would need checks this verifier does
// not make, so it is refused rather than ignored.
var proofMembers = []string{"@context", "type", "cryptosuite", "created", "verificationMethod", "proofPurpose", "proofValue"}

// Sign adds an eddsa-jcs-2022 proof made with key at time created to doc
// and returns the signed document's RFC 8785 bytes. doc must not carry a
// proof already, and if it names an issuer, the issuer must be key's
// did:key: Sign refuses to make a document its own Verify would refuse for
// either reason.
func Sign(doc map[string]any, key ed25519.PrivateKey, created time.Time) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("signing document: not an Ed25519 private key")
	}
	tree, err := normalize(doc)
	if err != nil {
		return nil, fmt.Errorf("signing document: %w", err)
	}
	if _, ok := tree["proof"]; ok {
		return nil, fmt.Errorf("signing document: it already carries a proof")
	}
	did := DIDKey(key.Public().(ed25519.PublicKey))
	if id, ok := issuerID(tree["issuer"]); ok && id != did {
		return nil, fmt.Errorf("signing document: issuer %s is not the signing key %s", clip(id), did)
	}
	proof := proofOptions(tree, did, created)
	if err := attachProof(tree, proof, key); err != nil {
		return nil, fmt.Errorf("signing document: %w", err)
	}
	return canon.Encode(tree)
}

// normalize turns any JSON-marshalable map into the tree canon.Parse would
// give for its canonical bytes, so signing and verifying see the same values.
// Parsing encoding/json's output strictly is enough: canonical bytes parse to
// the same tree, so there is no need to encode and parse twice.
func normalize(doc map[string]any) (map[string]any, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding json: %w", err)
	}
	v, err := canon.Parse(b)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// proofOptions is the proof without proofValue. It carries the document's
// @context, as AWR/2 §6.2 step 9 requires, so generic eddsa-jcs-2022
// verifiers that rebuild the configuration from the proof alone agree.
func proofOptions(doc map[string]any, did string, created time.Time) map[string]any {
	p := map[string]any{
		"type":               ProofType,
		"cryptosuite":        Cryptosuite,
		"created":            FormatTime(created),
		"verificationMethod": VerificationMethod(did),
		"proofPurpose":       ProofPurpose,
	}
	if ctx, ok := doc["@context"]; ok {
		p["@context"] = ctx
	}
	return p
}

// attachProof signs doc (which has no proof) under options and stores the
// finished proof in doc.
func attachProof(doc, options map[string]any, key ed25519.PrivateKey) error {
	msg, err := hashData(doc, options)
	if err != nil {
		return err
	}
	proof := maps1(options)
	proof["proofValue"] = "z" + base58Encode(ed25519.Sign(key, msg))
	doc["proof"] = proof
	return nil
}

// hashData is SHA-256(JCS(proofConfig)) ‖ SHA-256(JCS(unsecured document)),
// proof configuration first (vc-di-eddsa §3.3.4; AWR/2 §6.2 step 6). The
// configuration is the proof minus proofValue with the document's
// @context, whether or not the serialized proof carried one.
func hashData(doc, proof map[string]any) ([]byte, error) {
	config := maps1(proof)
	delete(config, "proofValue")
	if ctx, ok := doc["@context"]; ok {
		config["@context"] = ctx
	}
	unsecured := maps1(doc)
	delete(unsecured, "proof")
	cb, err := canon.Encode(config)
	if err != nil {
		return nil, fmt.Errorf("canonicalizing proof configuration: %w", err)
	}
	db, err := canon.Encode(unsecured)
	if err != nil {
		return nil, fmt.Errorf("canonicalizing document: %w", err)
	}
	ch, dh := sha256.Sum256(cb), sha256.Sum256(db)
	return slices.Concat(ch[:], dh[:]), nil
}

// maps1 is a one-level copy, enough because callers only add or remove
// top-level members.
func maps1(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// issuerID reads a VC issuer: a string, or an object with a string id.
func issuerID(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case map[string]any:
		id, ok := x["id"].(string)
		return id, ok
	}
	return "", false
}
