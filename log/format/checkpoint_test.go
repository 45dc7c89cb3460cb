package format_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/format"
)

func TestCheckpointShapeAndStrictness(t *testing.T) {
	_, cp := testHead(t)
	v := testVerifier(t)
	c, err := format.ParseCheckpoint(cp, v)
	if err != nil || c.Size != 2 || c.Origin != testOrigin {
		t.Fatalf("ParseCheckpoint: %v %+v", err, c)
	}
	text, sigs, _ := strings.Cut(string(cp), "\n\n")
	if text+"\n" != c.Text() || !strings.HasPrefix(sigs, "— "+testOrigin+" ") {
		t.Fatalf("checkpoint:\n%s", cp)
	}
	// Bodies that must be refused even when correctly signed.
	signer := testSigner(t)
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
		if _, err := format.ParseCheckpoint(msg, v); err == nil {
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
			if c, err := format.ParseCheckpoint(m, v); err == nil {
				t.Errorf("byte %d ^ %#x accepted as %+v:\n%s", i, mask, c, m)
			}
		}
	}
}

// TestCheckpointBadSignature: a line with the log's name and key ID whose signature fails is
// ErrSignature; a checkpoint signed by nobody known is refused but is not.
func TestCheckpointBadSignature(t *testing.T) {
	_, cp := testHead(t)
	c, _ := format.ParseCheckpoint(cp, testVerifier(t))
	text := c.Text()
	sig := cp[len(text)+1:]
	forged := append([]byte(text+"\n"), sig...)
	forged[len(forged)-10] ^= 'A' ^ 'B' // inside the Ed25519 signature's base64
	if forged[len(forged)-10] == sig[len(sig)-10] {
		t.Fatal("the forgery changed nothing")
	}
	if _, err := format.ParseCheckpoint(forged, testVerifier(t)); !errors.Is(err, format.ErrSignature) {
		t.Errorf("a failed log signature: %v, want ErrSignature", err)
	}
	other, err := format.NewVerifier("other.example/log", testPub())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := format.ParseCheckpoint(cp, other); err == nil || errors.Is(err, format.ErrSignature) {
		t.Errorf("a note without the verifier's signature: %v, want a refusal that is not ErrSignature", err)
	}
}

func TestParseCheckpointText(t *testing.T) {
	const root = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
	good := "example.com/log\n0\n" + root + "\n"
	if c, err := format.ParseCheckpointText(good); err != nil || c.Size != 0 || c.Root != format.EmptyRoot() || c.Text() != good {
		t.Fatalf("%q: %+v %v", good, c, err)
	}
	for name, text := range map[string]string{
		"no final newline": strings.TrimSuffix(good, "\n"),
		"empty origin":     "\n0\n" + root + "\n",
		"space in origin":  "example.com/a log\n0\n" + root + "\n",
		"plus in origin":   "example.com/a+log\n0\n" + root + "\n",
		"tab in origin":    "example.com/a\tlog\n0\n" + root + "\n",
		"control char":     "example.com/\x01log\n0\n" + root + "\n",
		"invalid UTF-8":    "example.com/\xfflog\n0\n" + root + "\n",
		"negative size":    "example.com/log\n-1\n" + root + "\n",
		"size over 2^64":   "example.com/log\n18446744073709551616\n" + root + "\n",
		"unpadded root":    "example.com/log\n0\n" + strings.TrimSuffix(root, "=") + "\n",
		"url-safe root":    "example.com/log\n0\n" + strings.ReplaceAll(root, "+", "-") + "\n",
		"extension":        good + "ext\n",
		"CRLF":             strings.ReplaceAll(good, "\n", "\r\n"),
	} {
		if c, err := format.ParseCheckpointText(text); err == nil {
			t.Errorf("%s: accepted as %+v", name, c)
		}
	}
}
