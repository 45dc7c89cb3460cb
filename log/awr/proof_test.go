package awr

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/log/canon"
)

var vectorFiles = []string{
	"testdata/pass-01-pattern-scan.awr.json",
	"testdata/pass-03-tool-set-continuity.awr.json",
}

func readVector(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVectorsVerify(t *testing.T) {
	for _, path := range vectorFiles {
		v, err := Verify(readVector(t, path))
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if v.Issuer != demoDID {
			t.Errorf("%s: issuer %s", path, v.Issuer)
		}
		if v.Created != time.Date(2026, 7, 30, 9, 15, 0, 0, time.UTC) {
			t.Errorf("%s: created %v", path, v.Created)
		}
		want, err := canon.Canonicalize(readVector(t, path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(v.JCS, want) {
			t.Errorf("%s: Verified.JCS is not the canonical form of the input", path)
		}
		// Layout is not signed: the compact canonical form verifies too.
		if _, err := Verify(want); err != nil {
			t.Errorf("%s: canonical form refused: %v", path, err)
		}
	}
}

// TestVectorsResign removes each vector's proof and signs the body again
// with the demonstration key at the proof's own time: Ed25519 is
// deterministic, so the proofValue must come back exactly.
func TestVectorsResign(t *testing.T) {
	for _, path := range vectorFiles {
		doc, proof := splitProof(t, readVector(t, path))
		created, err := time.Parse(time.RFC3339, proof["created"].(string))
		if err != nil {
			t.Fatal(err)
		}
		signed, err := Sign(doc, demoKey(), created)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		_, again := splitProof(t, signed)
		if again["proofValue"] != proof["proofValue"] {
			t.Errorf("%s: proofValue %s, vector has %s", path, again["proofValue"], proof["proofValue"])
		}
		want, _ := canon.Canonicalize(readVector(t, path))
		if !bytes.Equal(signed, want) {
			t.Errorf("%s: re-signed document differs from the vector's canonical form", path)
		}
	}
}

func splitProof(t *testing.T, b []byte) (map[string]any, map[string]any) {
	t.Helper()
	v, err := canon.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	doc := v.(map[string]any)
	proof := doc["proof"].(map[string]any)
	delete(doc, "proof")
	return doc, proof
}

// TestMangleEveryByte flips each byte of each vector: either Verify refuses
// the result, or the change left the canonical form (hence every signed
// value) as it was and Verify accepts it.
func TestMangleEveryByte(t *testing.T) {
	for _, path := range vectorFiles {
		orig := readVector(t, path)
		want, err := canon.Canonicalize(orig)
		if err != nil {
			t.Fatal(err)
		}
		refused, badSig := 0, 0
		step := 1
		if testing.Short() {
			step = 7 // a spread sample; the full sweep takes a couple of seconds
		}
		for i := 0; i < len(orig); i += step {
			b := bytes.Clone(orig)
			b[i] ^= 0x01
			_, verr := Verify(b)
			got, cerr := canon.Canonicalize(b)
			same := cerr == nil && bytes.Equal(got, want)
			switch {
			case verr == nil && !same:
				t.Errorf("%s: byte %d (%q→%q) changed the document and it still verifies", path, i, orig[i], b[i])
			case verr != nil && same:
				t.Errorf("%s: byte %d changed nothing signed but Verify refused: %v", path, i, verr)
			case verr != nil:
				refused++
			}
			var fe *FormatError
			var se *SignatureError
			if verr != nil && !errors.As(verr, &fe) && !errors.As(verr, &se) {
				t.Errorf("%s: byte %d: untyped error %v", path, i, verr)
			}
			if errors.As(verr, &se) {
				badSig++
			}
		}
		// Flips inside signed strings reach the signature check; if none
		// did, the structural checks would be doing all the work.
		if refused == 0 || badSig == 0 {
			t.Errorf("%s: %d flips refused, %d by the signature check", path, refused, badSig)
		}
		t.Logf("%s: %d flips refused, %d of them by the signature check", path, refused, badSig)
	}
}

// TestVerifyRefuses signs documents that break one rule each with the demo
// key, so only the rule under test can be why Verify refuses.
func TestVerifyRefuses(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(doc, proof map[string]any)
		code   string
	}{
		{"proof type", func(_, p map[string]any) { p["type"] = "Ed25519Signature2020" }, CodeProofType},
		{"cryptosuite", func(_, p map[string]any) { p["cryptosuite"] = "eddsa-rdfc-2022" }, CodeCryptosuite},
		{"purpose", func(_, p map[string]any) { p["proofPurpose"] = "authentication" }, CodeProofPurpose},
		{"vm fragment", func(_, p map[string]any) { p["verificationMethod"] = demoDID + "#key-1" }, CodeVerification},
		{"vm other did", func(_, p map[string]any) {
			p["verificationMethod"] = VerificationMethod("did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp")
		}, CodeVerification},
		{"proof context", func(_, p map[string]any) { p["@context"] = []any{VCContext} }, CodeProofContext},
		{"created", func(_, p map[string]any) { p["created"] = "2026-07-30 09:15:00" }, CodeProofCreated},
		{"created offset", func(_, p map[string]any) { p["created"] = "2026-07-30T09:15:00+00:00" }, CodeProofCreated},
		{"unknown proof member", func(_, p map[string]any) { p["expires"] = "2030-01-01T00:00:00Z" }, CodeProofMember},
		{"string issuer", func(d, _ map[string]any) { d["issuer"] = demoDID }, CodeIssuer},
		{"non-did issuer", func(d, _ map[string]any) { d["issuer"] = map[string]any{"id": "https://example.com"} }, CodeNotDIDKey},
		{"no VC type", func(d, _ map[string]any) { d["type"] = []any{"VerificationVerdict"} }, CodeType},
		{"two AWR types", func(d, _ map[string]any) {
			d["type"] = []any{"VerifiableCredential", "VerificationVerdict", "WorkReceipt"}
		}, CodeDocType},
		{"repeated type", func(d, _ map[string]any) {
			d["type"] = []any{"VerifiableCredential", "VerificationVerdict", "VerificationVerdict"}
		}, CodeDocType},
		{"context order", func(d, _ map[string]any) { d["@context"] = []any{AWRContext, VCContext} }, CodeContext},
		{"no awr context", func(d, _ map[string]any) { d["@context"] = []any{VCContext} }, CodeAWRContext},
		{"relative id", func(d, _ map[string]any) { d["id"] = "label-1" }, CodeID},
		{"awr version 1", func(d, _ map[string]any) { d["awrVersion"] = "1.0.0" }, CodeVersion},
		{"validFrom", func(d, _ map[string]any) { d["validFrom"] = "yesterday" }, CodeValidFrom},
		{"validUntil early", func(d, _ map[string]any) { d["validUntil"] = "2020-01-01T00:00:00Z" }, CodeValidFrom},
		{"subject array", func(d, _ map[string]any) { d["credentialSubject"] = []any{} }, CodeSubject},
		{"after:proof array", func(d, p map[string]any) { d["proof"] = []any{p} }, CodeProofMissing},
		{"after:no proof", func(d, _ map[string]any) { delete(d, "proof") }, CodeProofMissing},
		{"after:base64 proofValue", func(_, p map[string]any) { p["proofValue"] = "u" + p["proofValue"].(string)[1:] }, CodeProofValue},
		{"after:short proofValue", func(_, p map[string]any) { p["proofValue"] = p["proofValue"].(string)[:40] }, CodeProofValue},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := signMutated(t, c.name, c.mutate)
			_, err := Verify(b)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("Verify error = %v, want *FormatError %s", err, c.code)
			}
			if fe.Code != c.code {
				t.Errorf("code = %s (%v), want %s", fe.Code, err, c.code)
			}
		})
	}
}

// signMutated re-signs the pattern-scan vector with the demo key after
// mutate changed the document or the proof options, bypassing Sign's own
// checks. Mutations whose name starts with "after:" run on the signed
// document instead, for rules about the proof value and proof placement.
func signMutated(t *testing.T, name string, mutate func(doc, proof map[string]any)) []byte {
	t.Helper()
	doc, proof := splitProof(t, readVector(t, vectorFiles[0]))
	delete(proof, "proofValue")
	after := strings.HasPrefix(name, "after:")
	if !after {
		mutate(doc, proof)
	}
	if err := attachProof(doc, proof, demoKey()); err != nil {
		t.Fatal(err)
	}
	if after {
		mutate(doc, doc["proof"].(map[string]any))
	}
	b, err := canon.Encode(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSignRefuses(t *testing.T) {
	doc, _ := splitProof(t, readVector(t, vectorFiles[0]))
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	if _, err := Sign(doc, other, time.Now()); err == nil {
		t.Error("Sign accepted a key that is not the document's issuer")
	}
	doc["proof"] = map[string]any{}
	if _, err := Sign(doc, demoKey(), time.Now()); err == nil {
		t.Error("Sign accepted a document that already has a proof")
	}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	doc, _ := splitProof(t, readVector(t, vectorFiles[1]))
	doc["id"] = "urn:uuid:00000000-0000-4000-8000-000000000000"
	signed, err := Sign(doc, demoKey(), time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Verify(signed)
	if err != nil {
		t.Fatal(err)
	}
	if v.ID != doc["id"] || !v.Created.Equal(time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("verified %s created %v", v.ID, v.Created)
	}
}

func FuzzVerify(f *testing.F) {
	for _, path := range vectorFiles {
		f.Add(readVector(f, path))
	}
	f.Add([]byte(`{"proof":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Verify(b)
		if err != nil {
			var fe *FormatError
			var se *SignatureError
			if !errors.As(err, &fe) && !errors.As(err, &se) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		// Whatever verifies must verify again from its canonical bytes.
		if _, err := Verify(v.JCS); err != nil {
			t.Fatalf("canonical form of a verified document fails: %v", err)
		}
	})
}

func TestVectorFilesPresent(t *testing.T) {
	m, _ := filepath.Glob("testdata/*.awr.json")
	if len(m) != len(vectorFiles) {
		t.Errorf("testdata holds %d vectors, tests know %d", len(m), len(vectorFiles))
	}
}
