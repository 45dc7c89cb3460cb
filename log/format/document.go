package format

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
)

// MaxDocumentBytes bounds a signed document VerifyDocument reads.
const MaxDocumentBytes = 8 << 20

// SignDocument signs a HISTOR document as HISTOR's sign_document does: the
// Ed25519 signature of the did's key over the RFC 8785 bytes of every member
// (type among them, so a signature never carries over to another type), kept
// in a signature member {alg, verificationMethod, value (base64url)}. body
// must carry a string type and no signature; it is not modified. The
// answer is the canonical bytes of the signed document.
func SignDocument(key ed25519.PrivateKey, did string, body map[string]any) ([]byte, error) {
	if t, ok := body["type"].(string); !ok || t == "" {
		return nil, errors.New("signing document: a signed document must carry its type")
	}
	if _, ok := body["signature"]; ok {
		return nil, errors.New("signing document: body already has a signature member")
	}
	msg, err := canon.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("canonicalising document: %w", err)
	}
	doc := maps.Clone(body)
	doc["signature"] = map[string]any{
		"alg":                "Ed25519",
		"verificationMethod": awr.VerificationMethod(did),
		"value":              base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, msg)),
	}
	return canon.Marshal(doc)
}

// VerifyDocument parses raw strictly and checks that it is a document of
// wantType signed by pub over every member but signature, its signature
// member naming pub's did:key; it returns the members without the
// signature. A signature that does not verify wraps
// ErrSignature.
func VerifyDocument(raw []byte, pub ed25519.PublicKey, wantType string) (map[string]any, error) {
	v, err := canon.ParseWith(raw, canon.Limits{MaxDepth: 64, MaxBytes: MaxDocumentBytes})
	if err != nil {
		return nil, fmt.Errorf("parsing document: %w", err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("parsing document: not an object")
	}
	if doc["type"] != wantType {
		return nil, fmt.Errorf("verifying document: type %v, want %s", doc["type"], wantType)
	}
	sig, ok := doc["signature"].(map[string]any)
	if !ok || sig["alg"] != "Ed25519" {
		return nil, errors.New("verifying document: no Ed25519 signature member")
	}
	if len(pub) == ed25519.PublicKeySize && sig["verificationMethod"] != awr.VerificationMethod(awr.DIDKey(pub)) {
		return nil, fmt.Errorf("verifying document: the signature names %v, not the key's did", sig["verificationMethod"])
	}
	value, _ := sig["value"].(string)
	s, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("verifying document: %w", ErrSignature)
	}
	body := maps.Clone(doc)
	delete(body, "signature")
	msg, err := canon.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("canonicalising document: %w", err)
	}
	if !ed25519.Verify(pub, msg, s) {
		return nil, fmt.Errorf("verifying document: %w", ErrSignature)
	}
	return body, nil
}
