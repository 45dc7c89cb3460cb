package format_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/format"
)

// TestSignDocumentAsHISTOR: the signature is over the JCS of the body with
// its type, checked here by hand rather than through VerifyDocument; any
// changed member, or another type, is refused.
func TestSignDocumentAsHISTOR(t *testing.T) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	pub := key.Public().(ed25519.PublicKey)
	did := awr.DIDKey(pub)
	body := map[string]any{"type": "histor.behaviour-census/v1", "issuer": did, "packages": int64(3), "phases": map[string]any{"b": "x", "a": []any{}}}
	raw, err := format.SignDocument(key, did, body)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	sig := doc["signature"].(map[string]any)
	want := `{"issuer":"` + did + `","packages":3,"phases":{"a":[],"b":"x"},"type":"histor.behaviour-census/v1"}`
	value, _ := base64.RawURLEncoding.DecodeString(sig["value"].(string))
	if !ed25519.Verify(pub, []byte(want), value) || sig["verificationMethod"] != awr.VerificationMethod(did) || sig["alg"] != "Ed25519" {
		t.Fatalf("signature %v does not verify over %s", sig, want)
	}
	if _, has := body["signature"]; has {
		t.Fatal("SignDocument modified its input")
	}
	got, err := format.VerifyDocument(raw, pub, "histor.behaviour-census/v1")
	if err != nil || got["packages"] == nil {
		t.Fatalf("VerifyDocument: %v %v", got, err)
	}
	if _, err := format.VerifyDocument(raw, pub, "histor.security-event/v1"); err == nil {
		t.Error("accepted under another type")
	}
	doc["signature"].(map[string]any)["verificationMethod"] = "did:key:zOther#zOther"
	renamed, _ := canon.Marshal(doc)
	if _, err := format.VerifyDocument(renamed, pub, "histor.behaviour-census/v1"); err == nil {
		t.Error("accepted a signature member that names another key")
	}
	doc["signature"].(map[string]any)["verificationMethod"] = awr.VerificationMethod(did)
	doc["packages"] = 4
	tampered, _ := canon.Marshal(doc)
	if _, err := format.VerifyDocument(tampered, pub, "histor.behaviour-census/v1"); !errors.Is(err, format.ErrSignature) {
		t.Errorf("tampered document: %v", err)
	}
	if _, err := format.SignDocument(key, did, map[string]any{"a": 1}); err == nil {
		t.Error("signed a document without a type")
	}
}
