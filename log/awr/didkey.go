package awr

import (
	"crypto/ed25519"
	"strings"

	"github.com/histor-observer/histor/log/clip"
)

// didKeyPrefix starts every did:key. The method-specific id that follows is
// multibase base58btc ('z') of the multicodec-tagged public key.
const didKeyPrefix = "did:key:"

// ed25519PubCodec is the unsigned-varint multicodec for ed25519-pub (0xed).
var ed25519PubCodec = [2]byte{0xed, 0x01}

// DIDKey returns the did:key of an Ed25519 public key. It panics if pub is
// not 32 bytes, which is a programming error.
func DIDKey(pub ed25519.PublicKey) string {
	if len(pub) != ed25519.PublicKeySize {
		panic("awr: DIDKey of a key that is not 32 bytes")
	}
	b := make([]byte, 0, 2+ed25519.PublicKeySize)
	b = append(b, ed25519PubCodec[:]...)
	b = append(b, pub...)
	return didKeyPrefix + "z" + base58Encode(b)
}

// ParseDIDKey returns the Ed25519 public key a did:key names. It is strict:
// a bare DID (no fragment, path or query), multibase base58btc, the
// ed25519-pub multicodec and exactly 32 key bytes, in the one encoding
// DIDKey writes. Anything else is a *FormatError.
func ParseDIDKey(did string) (ed25519.PublicKey, error) {
	msi, ok := strings.CutPrefix(did, didKeyPrefix)
	if !ok {
		return nil, formatErr(CodeNotDIDKey, "%q is not a did:key", quoted(did))
	}
	if !strings.HasPrefix(msi, "z") {
		return nil, formatErr(CodeBadDIDKey, "did:key multibase prefix must be 'z' (base58btc)")
	}
	raw, err := base58Decode(msi[1:])
	if err != nil {
		return nil, formatErr(CodeBadDIDKey, "did:key %q is not base58btc", quoted(did))
	}
	if len(raw) < 2 || raw[0] != ed25519PubCodec[0] || raw[1] != ed25519PubCodec[1] {
		return nil, formatErr(CodeKeyType, "did:key does not name an ed25519-pub key (multicodec 0xed01)")
	}
	if len(raw) != 2+ed25519.PublicKeySize {
		return nil, formatErr(CodeBadDIDKey, "did:key carries %d key bytes, want %d", len(raw)-2, ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(raw[2:]), nil
}

// VerificationMethod is the verification method URL of a did:key: the DID,
// '#', and its method-specific id again (did:key spec §3.1.2).
func VerificationMethod(did string) string {
	return did + "#" + strings.TrimPrefix(did, didKeyPrefix)
}

// quoted shortens attacker-supplied text quoted in an error.
func quoted(s string) string { return clip.String(s, 80) }
