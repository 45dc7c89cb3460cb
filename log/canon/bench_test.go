package canon

import (
	"fmt"
	"strings"
	"testing"
)

// benchDoc is a label-sized document (~1 KiB) of the shape histor signs.
func benchDoc() []byte {
	var sb strings.Builder
	sb.WriteString(`{"@context":["https://www.w3.org/ns/credentials/v2"],"type":["VerifiableCredential","VerificationVerdict"],"credentialSubject":{`)
	for i := range 20 {
		fmt.Fprintf(&sb, `"member%02d":{"n":%d,"s":"value \u00e9 %d","b":true},`, i, i*1000003, i)
	}
	sb.WriteString(`"end":null}}`)
	return []byte(sb.String())
}

func BenchmarkParse(b *testing.B) {
	doc := benchDoc()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, err := Parse(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCanonicalize(b *testing.B) {
	doc := benchDoc()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, err := Canonicalize(doc); err != nil {
			b.Fatal(err)
		}
	}
}
