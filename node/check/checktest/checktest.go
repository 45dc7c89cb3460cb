// Package checktest holds what the /check tests of node/check and of the whole node share:
// the digests and targets they seed, and a check of a signed answer from its bytes alone.
package checktest

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/mtl"
)

// DigestOf is the MTL/1 tool-set digest of tools, a JSON list.
func DigestOf(t testing.TB, tools string) string {
	t.Helper()
	v, err := canon.ParseDeferringNumbers([]byte(tools), canon.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	d, err := mtl.Digest(v.([]any))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// CanonicalTools is tools as MTL/1 normalises them, in canonical JSON.
func CanonicalTools(t testing.TB, tools string) []byte {
	t.Helper()
	v, _ := canon.Parse([]byte(tools))
	b, err := mtl.CanonicalToolSet(v.([]any))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// VerifyAnswer checks a signed answer from its bytes alone with code
// that shares nothing with the signer: encoding/json to split off the
// signature, gowebpki/jcs for RFC 8785, the key from its raw bytes.
func VerifyAnswer(t testing.TB, body []byte, pub ed25519.PublicKey) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("answer is not JSON: %v", err)
	}
	var sig struct{ Alg, VerificationMethod, Value string }
	if err := json.Unmarshal(m["signature"], &sig); err != nil {
		t.Fatalf("signature: %v", err)
	}
	var issuer, typ string
	json.Unmarshal(m["issuer"], &issuer)
	json.Unmarshal(m["type"], &typ)
	if typ != "histor.check/v1" || sig.Alg != "Ed25519" || sig.VerificationMethod != issuer+"#"+strings.TrimPrefix(issuer, "did:key:") {
		t.Fatalf("type %q, alg %q, verificationMethod %q for issuer %q", typ, sig.Alg, sig.VerificationMethod, issuer)
	}
	delete(m, "signature")
	unsigned, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := jcs.Transform(unsigned)
	if err != nil {
		t.Fatal(err)
	}
	value, err := base64.RawURLEncoding.DecodeString(sig.Value)
	if err != nil || !ed25519.Verify(pub, msg, value) {
		t.Fatalf("signature does not verify (%v)", err)
	}
	if canonical, _ := jcs.Transform(body); !bytes.Equal(canonical, body) {
		t.Errorf("answer is not served in its canonical form")
	}
}

// MustJSON is v as JSON.
func MustJSON(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
