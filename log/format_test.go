package log

import (
	"bytes"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

func testHead(t testing.TB) (sth, checkpoint []byte) {
	t.Helper()
	root := naiveRoot([][32]byte{naiveLeaf([]byte("a")), naiveLeaf([]byte("b"))})
	when := time.Date(2026, 9, 23, 9, 13, 4, 0, time.UTC)
	sth, err := signSTH(testKey(), testDID, 2, root, when)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := signCheckpoint(mustNoteSigner(t, testOrigin, testKey()), Checkpoint{Origin: testOrigin, Size: 2, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	return sth, cp
}

func testVerifier(t testing.TB) note.Verifier {
	v, err := NewVerifier(testOrigin, testKey().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

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
	s, err := VerifySTH(sth, testKey().Public().(ed25519.PublicKey))
	if err != nil || s.TreeSize != 2 || s.Log != testDID {
		t.Fatalf("VerifySTH: %v", err)
	}
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)).Public().(ed25519.PublicKey)
	if _, err := VerifySTH(sth, other); err == nil {
		t.Fatal("verified under another key")
	}
}

// TestSTHMangle flips bits in every byte of a signed head: each result must
// be refused, since every byte is either signed, structural or checked
// against a canonical form.
func TestSTHMangle(t *testing.T) {
	sth, _ := testHead(t)
	pub := testKey().Public().(ed25519.PublicKey)
	for i := range sth {
		for _, mask := range []byte{0x01, 0x20, 0x80} {
			m := bytes.Clone(sth)
			m[i] ^= mask
			if _, err := VerifySTH(m, pub); err == nil {
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
		"fractional time":  strings.Replace(s, `04Z"`, `04.5Z"`, 1),
		"trailing data":    s + "{}",
		"other type":       strings.Replace(s, `histor.sth/v1`, `histor.sth/v2`, 1),
	}
	for name, doc := range bad {
		if _, err := ParseSTH([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := ParseSTH(sth); err != nil {
		t.Fatalf("the original: %v", err)
	}
	// Whitespace and member order are not part of the meaning (HISTOR serves
	// pretty JSON); such a document still verifies.
	pretty := strings.Replace(strings.Replace(s, `{"log"`, "{\n  \"log\"", 1), `"histor.sth/v1"`, `"histor.sth\/v1"`, 1)
	if _, err := VerifySTH([]byte(pretty), testKey().Public().(ed25519.PublicKey)); err != nil {
		t.Fatalf("whitespace changed the meaning: %v", err)
	}
}

func TestCheckpointShapeAndStrictness(t *testing.T) {
	_, cp := testHead(t)
	v := testVerifier(t)
	c, err := ParseCheckpoint(cp, v)
	if err != nil || c.Size != 2 || c.Origin != testOrigin {
		t.Fatalf("ParseCheckpoint: %v %+v", err, c)
	}
	text, sigs, _ := strings.Cut(string(cp), "\n\n")
	if strings.Count(text, "\n") != 2 || !strings.HasPrefix(sigs, "— "+testOrigin+" ") {
		t.Fatalf("checkpoint:\n%s", cp)
	}
	// Bodies that must be refused even when correctly signed.
	signer := mustNoteSigner(t, testOrigin, testKey())
	for name, body := range map[string]string{
		"extension line": text + "\nextra\n",
		"leading zero":   strings.Replace(text, "\n2\n", "\n02\n", 1) + "\n",
		"plus size":      strings.Replace(text, "\n2\n", "\n+2\n", 1) + "\n",
		"other origin":   strings.Replace(text, testOrigin, "other.example/log", 1) + "\n",
		"short root":     strings.Join(strings.Split(text, "\n")[:2], "\n") + "\nAAAA\n",
	} {
		msg, err := note.Sign(&note.Note{Text: body}, signer)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseCheckpoint(msg, v); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestCheckpointMangle flips bits in every byte of a signed checkpoint; the
// strict base64 check on signature lines leaves no byte whose change keeps
// the note valid.
func TestCheckpointMangle(t *testing.T) {
	_, cp := testHead(t)
	v := testVerifier(t)
	for i := range cp {
		for _, mask := range []byte{0x01, 0x20, 0x80} {
			m := bytes.Clone(cp)
			m[i] ^= mask
			if c, err := ParseCheckpoint(m, v); err == nil {
				t.Errorf("byte %d ^ %#x accepted as %+v:\n%s", i, mask, c, m)
			}
		}
	}
}

func FuzzParseSTH(f *testing.F) {
	sth, _ := testHead(f)
	f.Add(sth)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"type":"histor.sth/v1"}`))
	pub := testKey().Public().(ed25519.PublicKey)
	f.Fuzz(func(t *testing.T, doc []byte) {
		s, err := ParseSTH(doc)
		if err != nil {
			return
		}
		// Whatever parses re-signs to a head that parses to the same values.
		again, err := signSTH(testKey(), s.Log, s.TreeSize, s.Root, s.Time)
		if err != nil {
			t.Fatalf("re-signing a parsed head: %v", err)
		}
		s2, err := VerifySTH(again, pub)
		if err != nil || s2.TreeSize != s.TreeSize || s2.Root != s.Root || !s2.Time.Equal(s.Time) || s2.Log != s.Log {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzParseCheckpoint(f *testing.F) {
	_, cp := testHead(f)
	f.Add(cp)
	f.Add([]byte("histor.test/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n\n— histor.test/log AAAA\n"))
	v := testVerifier(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		c, err := ParseCheckpoint(msg, v)
		if err != nil {
			return
		}
		// Only our key signs; an accepted note must be our text exactly.
		if !bytes.HasPrefix(msg, []byte(c.text()+"\n")) {
			t.Fatalf("accepted %q as %+v", msg, c)
		}
	})
}
