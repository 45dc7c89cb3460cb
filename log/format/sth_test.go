package format_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	"github.com/histor-observer/histor/log/format"
)

func TestSTHShape(t *testing.T) {
	sth, _ := testHead(t)
	// HISTOR's shape: these members, base64url without padding, "Z" time.
	want := `{"log":"` + testDID + `","rootHash":"`
	if !bytes.HasPrefix(sth, []byte(want)) {
		t.Fatalf("STH starts %s", sth)
	}
	for _, part := range []string{
		`"signature":{"alg":"Ed25519","value":"`,
		`","verificationMethod":"` + testDID + `#z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd"},`,
		`"timestamp":"2026-09-23T09:13:04Z","treeSize":2,"type":"histor.sth/v1"}`,
	} {
		if !bytes.Contains(sth, []byte(part)) {
			t.Errorf("STH lacks %s:\n%s", part, sth)
		}
	}
	if bytes.Contains(sth, []byte("=")) {
		t.Errorf("STH signature is padded: %s", sth)
	}
	s, err := format.VerifySTH(sth, testPub())
	if err != nil || s.TreeSize != 2 || s.Log != testDID {
		t.Fatalf("VerifySTH: %v", err)
	}
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)).Public().(ed25519.PublicKey)
	if _, err := format.VerifySTH(sth, other); !errors.Is(err, format.ErrSignature) {
		t.Fatalf("under another key: %v, want ErrSignature", err)
	}
}

// TestSTHMangle flips bits in every byte of a signed head: each result must
// be refused, since every byte is either signed, structural or checked
// against a canonical form.
func TestSTHMangle(t *testing.T) {
	sth, _ := testHead(t)
	for i := range sth {
		for _, mask := range []byte{0x01, 0x20, 0x80} {
			m := bytes.Clone(sth)
			m[i] ^= mask
			if _, err := format.VerifySTH(m, testPub()); err == nil {
				t.Errorf("byte %d ^ %#x accepted: %s", i, mask, m)
			}
		}
	}
}

func TestSTHStrictness(t *testing.T) {
	sth, _ := testHead(t)
	s := string(sth)
	bad := map[string]string{
		"duplicate member": strings.Replace(s, `{"log"`, `{"type":"histor.sth/v1","log"`, 1),
		"extra member":     strings.Replace(s, `{"log"`, `{"extra":1,"log"`, 1),
		"padded value":     strings.Replace(s, `"},"timestamp"`, `=="},"timestamp"`, 1),
		"fraction size":    strings.Replace(s, `"treeSize":2`, `"treeSize":2.0`, 1),
		"leading zero":     strings.Replace(s, `"treeSize":2`, `"treeSize":02`, 1),
		"huge size":        strings.Replace(s, `"treeSize":2`, `"treeSize":9007199254740992`, 1),
		"negative size":    strings.Replace(s, `"treeSize":2`, `"treeSize":-2`, 1),
		"fractional time":  strings.Replace(s, `04Z"`, `04.5Z"`, 1),
		"trailing data":    s + "{}",
		"other type":       strings.Replace(s, `histor.sth/v1`, `histor.sth/v2`, 1),
		"too long":         strings.Replace(s, `{"log"`, "{"+strings.Repeat(" ", format.MaxSTHBytes)+`"log"`, 1),
	}
	for name, doc := range bad {
		if _, err := format.ParseSTH([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := format.ParseSTH(sth); err != nil {
		t.Fatalf("the original: %v", err)
	}
	// Whitespace and member order are not part of the meaning (HISTOR serves
	// pretty JSON); such a document still verifies.
	pretty := strings.Replace(strings.Replace(s, `{"log"`, "{\n  \"log\"", 1), `"histor.sth/v1"`, `"histor.sth\/v1"`, 1)
	if _, err := format.VerifySTH([]byte(pretty), testPub()); err != nil {
		t.Fatalf("whitespace changed the meaning: %v", err)
	}
}
