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

func BenchmarkDIDKeyRoundTrip(b *testing.B) {
	pub := demoKey().Public().(ed25519.PublicKey)
	for b.Loop() {
		if _, err := ParseDIDKey(DIDKey(pub)); err != nil {
			b.Fatal(err)
		}
	}
}
