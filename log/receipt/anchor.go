package receipt

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/mtl"
)

// AnchorType is the type member of an anchor; it is inside the signed
// bytes, so no other signed document passes for one.
const AnchorType = "histor.receipt-anchor/v1"

// The window an anchor's issuedAt must fall in, HISTOR's: an issuer may
// flush a backlog after an outage, but an anchor is a claim about "when",
// so nothing from the future and nothing older than a month.
const (
	MaxFuture = 5 * time.Minute
	MaxAge    = 30 * 24 * time.Hour
)

const anchorTimeLayout = "2006-01-02T15:04:05Z"

// Anchor is one checked histor.receipt-anchor/v1 document.
type Anchor struct {
	Issuer        string // the did:key that signed it
	ReceiptDigest string // sha256-<base64> of the receipt, which stays with its owners
	IssuedAt      time.Time
	// JCS is the RFC 8785 bytes of the whole document, signature included:
	// the receipts log's entry, whose leaf hash is SHA-256(0x00 ‖ JCS).
	JCS []byte
}

// RefusedError says why an anchor is not logged; Reason is HISTOR's text.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "anchor refused: " + e.Reason }

func refused(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// SignAnchor makes the document an issuer submits: its four facts signed
// with key (whose did:key is the issuer), as canonical JSON.
func SignAnchor(key ed25519.PrivateKey, receiptDigest string, issuedAt time.Time) ([]byte, error) {
	did := awr.DIDKey(key.Public().(ed25519.PublicKey))
	body := anchorBody(did, receiptDigest, issuedAt.UTC().Format(anchorTimeLayout))
	msg, err := canon.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("canonicalising anchor: %w", err)
	}
	body["signature"] = map[string]any{
		"alg": "Ed25519", "verificationMethod": awr.VerificationMethod(did),
		"value": base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, msg)),
	}
	return canon.Marshal(body)
}

func anchorBody(issuer, digest, issuedAt string) map[string]any {
	return map[string]any{"type": AnchorType, "issuer": issuer, "receiptDigest": digest, "issuedAt": issuedAt}
}

// CheckAnchor admits one anchor as parsed by the canonical parser (package
// canon), in HISTOR's order of checks: its type, exactly its five members,
// an issuer accepts lists, an SRI digest, an issuedAt of whole UTC seconds
// within [now−MaxAge, now+MaxFuture], and the issuer's signature. Every
// refusal is a *RefusedError.
func CheckAnchor(v any, accepts func(did string) bool, now time.Time) (*Anchor, error) {
	m, ok := v.(map[string]any)
	if typ, _ := m["type"].(string); !ok || typ != AnchorType {
		return nil, refused("not a %s document", AnchorType)
	}
	if err := exactly(m, "type", "issuer", "receiptDigest", "issuedAt", "signature"); err != nil {
		return nil, err
	}
	a := &Anchor{}
	if a.Issuer, ok = m["issuer"].(string); !ok || !accepts(a.Issuer) {
		return nil, refused("issuer is not accepted by this log")
	}
	if a.ReceiptDigest, ok = m["receiptDigest"].(string); !ok || !mtl.ValidSRI(a.ReceiptDigest) {
		return nil, refused("receiptDigest must be a sha256- SRI digest")
	}
	stamp, _ := m["issuedAt"].(string)
	t, err := time.Parse(anchorTimeLayout, stamp)
	if err != nil || t.Format(anchorTimeLayout) != stamp {
		return nil, refused("issuedAt must be RFC 3339 UTC with whole seconds")
	}
	if t.After(now.Add(MaxFuture)) || t.Before(now.Add(-MaxAge)) {
		return nil, refused("issuedAt is outside the window this log accepts")
	}
	a.IssuedAt = t
	if !signedBy(m, a.Issuer) {
		return nil, refused("the issuer's signature does not verify")
	}
	if a.JCS, err = canon.Marshal(m); err != nil {
		return nil, refused("the anchor has no canonical form: %v", err)
	}
	return a, nil
}

func exactly(m map[string]any, names ...string) error {
	for _, n := range names {
		if _, ok := m[n]; !ok {
			return refused("an anchor carries exactly type, issuer, receiptDigest, issuedAt and signature")
		}
	}
	if len(m) != len(names) {
		return refused("an anchor carries exactly type, issuer, receiptDigest, issuedAt and signature")
	}
	return nil
}

// signedBy checks the signature block strictly (alg Ed25519, the issuer's
// verification method, an unpadded base64url value) and the signature over
// the JCS of the other four members.
func signedBy(m map[string]any, did string) bool {
	sig, ok := m["signature"].(map[string]any)
	if !ok || len(sig) != 3 || sig["alg"] != "Ed25519" || sig["verificationMethod"] != awr.VerificationMethod(did) {
		return false
	}
	value, _ := sig["value"].(string)
	raw, err := base64.RawURLEncoding.Strict().DecodeString(value)
	if err != nil || len(raw) != ed25519.SignatureSize {
		return false
	}
	pub, err := awr.ParseDIDKey(did)
	if err != nil {
		return false
	}
	msg, err := canon.Marshal(anchorBody(did, m["receiptDigest"].(string), m["issuedAt"].(string)))
	return err == nil && ed25519.Verify(pub, msg, raw)
}
