package events

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
)

// ErrInvalid is wrapped by every refusal of Verify.
var ErrInvalid = errors.New("invalid security event")

// Verify checks a signed event as a subscriber would: its type, that its
// issuer is pub's did:key, that id is the SHA-256 of the body without id
// and signature, and the Ed25519 signature over the body with id. It
// returns the parsed document.
func Verify(doc []byte, pub ed25519.PublicKey) (map[string]any, error) {
	v, err := canon.Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	m, ok := v.(map[string]any)
	if !ok || m["type"] != Type {
		return nil, fmt.Errorf("%w: type is not %s", ErrInvalid, Type)
	}
	did := awr.DIDKey(pub)
	sig, _ := m["signature"].(map[string]any)
	if m["issuer"] != did || sig == nil || sig["alg"] != "Ed25519" || sig["verificationMethod"] != awr.VerificationMethod(did) {
		return nil, fmt.Errorf("%w: issuer or signature header does not name the key", ErrInvalid)
	}
	value, _ := sig["value"].(string)
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil {
		return nil, fmt.Errorf("%w: signature value: %v", ErrInvalid, err)
	}
	body := make(map[string]any, len(m))
	for k, x := range m {
		if k != "signature" {
			body[k] = x
		}
	}
	msg, err := canon.Encode(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if !ed25519.Verify(pub, msg, raw) {
		return nil, fmt.Errorf("%w: signature does not verify", ErrInvalid)
	}
	delete(body, "id")
	unsigned, err := canon.Encode(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	sum := sha256.Sum256(unsigned)
	if m["id"] != hex.EncodeToString(sum[:]) {
		return nil, fmt.Errorf("%w: id is not the digest of the body", ErrInvalid)
	}
	return m, nil
}
