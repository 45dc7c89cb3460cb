package events

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/format"
)

// ErrInvalid is wrapped by every refusal of Verify.
var ErrInvalid = errors.New("invalid security event")

// Verify checks a signed event as a subscriber would: its type, that its
// issuer is pub's did:key, that id is the SHA-256 of the body without id
// and signature, and the Ed25519 signature over the body with id. It
// returns the parsed document.
func Verify(doc []byte, pub ed25519.PublicKey) (map[string]any, error) {
	body, err := format.VerifyDocument(doc, pub, Type)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if body["issuer"] != awr.DIDKey(pub) {
		return nil, fmt.Errorf("%w: issuer does not name the key", ErrInvalid)
	}
	id := body["id"]
	delete(body, "id")
	unsigned, err := canon.Encode(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	sum := sha256.Sum256(unsigned)
	if id != hex.EncodeToString(sum[:]) {
		return nil, fmt.Errorf("%w: id is not the digest of the body", ErrInvalid)
	}
	body["id"] = id
	return body, nil
}
