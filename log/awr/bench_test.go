package awr

import (
	"crypto/ed25519"
	"testing"
)

func BenchmarkVerify(b *testing.B) {
	doc := readVector(b, vectorFiles[0])
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, err := Verify(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIssueLabel(b *testing.B) {
	in := exampleInput()
	key := demoKey()
	for b.Loop() {
		if _, err := IssueLabel(MethodPatternScan, in, key); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSign isolates the signing half of IssueLabel: normalising the
// built document, hashing, signing and encoding the result.
func BenchmarkSign(b *testing.B) {
	in := exampleInput()
	doc, err := BuildLabel(MethodPatternScan, in)
	if err != nil {
		b.Fatal(err)
	}
	key := demoKey()
	for b.Loop() {
		if _, err := Sign(doc, key, in.IssuedAt); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDIDKeyRoundTrip(b *testing.B) {
	pub := demoKey().Public().(ed25519.PublicKey)
	for b.Loop() {
		if _, err := ParseDIDKey(DIDKey(pub)); err != nil {
			b.Fatal(err)
		}
	}
}
