package format_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"math"
	"strings"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
)

const witnessName = "witness.test/w1"

func witnessKey() ed25519.PrivateKey { return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32)) }

func testCosigner(t testing.TB) format.Cosigner {
	t.Helper()
	w, err := format.NewCosigner(witnessName, witnessKey().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func testCheckpoint(t testing.TB) format.Checkpoint {
	t.Helper()
	_, cp := testHead(t)
	c, err := format.ParseCheckpoint(cp, testVerifier(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCosignatureSpecVector parses the example line of c2sp.org/tlog-cosignature: its key ID
// and time are what the spec's example message says.
func TestCosignatureSpecVector(t *testing.T) {
	const line = "— witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA=="
	s, err := format.ParseCosignature(line)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "witness.example.com/w1" || s.KeyID != 0x8d66cf3f || s.Time != 1679315147 || len(s.Signature) != 64 {
		t.Errorf("parsed %+v", s)
	}
	if s.Line() != line {
		t.Errorf("Line() = %q, want the parsed line", s.Line())
	}
	c := format.Checkpoint{Origin: "example.com/behind-the-sofa", Size: 20852163}
	copy(c.Root[:], mustBase64(t, "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I="))
	want := "cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
	if got := string(format.CosignatureMessage(c, s.Time)); got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

func TestCosignatureRoundTrip(t *testing.T) {
	c, w := testCheckpoint(t), testCosigner(t)
	s, err := format.SignCosignature(witnessName, witnessKey(), c, 1_790_000_000)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := format.ParseCosignatures([]byte(s.Line() + "\n"))
	if err != nil || len(parsed) != 1 {
		t.Fatalf("ParseCosignatures: %v", err)
	}
	if err := w.Verify(c, parsed[0]); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	other := c
	other.Size++
	if err := w.Verify(other, parsed[0]); !errors.Is(err, format.ErrSignature) {
		t.Errorf("over another checkpoint: %v, want ErrSignature", err)
	}
	later := parsed[0]
	later.Time++
	if err := w.Verify(c, later); !errors.Is(err, format.ErrSignature) {
		t.Errorf("with another time: %v, want ErrSignature", err)
	}
	stranger, _ := format.NewCosigner("witness.test/w2", w.Key)
	if stranger.Matches(parsed[0]) || stranger.Verify(c, parsed[0]) == nil {
		t.Error("a line by w1 was taken for w2's")
	}
}

// TestCosignatureMangle flips bits in every byte of a cosignature line: each result must be
// refused by parsing or by verification.
func TestCosignatureMangle(t *testing.T) {
	c, w := testCheckpoint(t), testCosigner(t)
	s, err := format.SignCosignature(witnessName, witnessKey(), c, 1_790_000_000)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(s.Line())
	for i := range line {
		for _, mask := range []byte{0x01, 0x20, 0x80} {
			m := bytes.Clone(line)
			m[i] ^= mask
			p, err := format.ParseCosignature(string(m))
			if err == nil && w.Verify(c, p) == nil {
				t.Errorf("byte %d ^ %#x accepted: %s", i, mask, m)
			}
		}
	}
}

// TestCosignatureInterop: torchwood's cosigner and ours agree both ways, through note.Open.
func TestCosignatureInterop(t *testing.T) {
	c, w := testCheckpoint(t), testCosigner(t)
	tw, err := torchwood.NewCosignatureSigner(witnessName, witnessKey())
	if err != nil {
		t.Fatal(err)
	}
	_, logNote := testHead(t)
	// Theirs, checked by ours: the line torchwood appends verifies, alone and through note.Open.
	n, err := note.Open(logNote, note.VerifierList(testVerifier(t)))
	if err != nil {
		t.Fatal(err)
	}
	cosigned, err := note.Sign(n, tw)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(cosigned), "\n"), "\n")
	s, err := format.ParseCosignature(lines[len(lines)-1])
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Verify(c, s); err != nil {
		t.Errorf("torchwood's cosignature: %v", err)
	}
	opened, err := note.Open(cosigned, note.VerifierList(testVerifier(t), w.Verifier()))
	if err != nil || len(opened.Sigs) != 2 {
		t.Errorf("note.Open with our cosigner verifier: %v", err)
	}
	// Ours, checked by theirs.
	mine, err := format.SignCosignature(witnessName, witnessKey(), c, 1_790_000_000)
	if err != nil {
		t.Fatal(err)
	}
	both := append(bytes.Clone(logNote), mine.Line()+"\n"...)
	if _, err := note.Open(both, note.VerifierList(testVerifier(t), tw.Verifier())); err != nil {
		t.Errorf("torchwood's verifier on our cosignature: %v", err)
	}
}

func TestParseCosignatureRefusals(t *testing.T) {
	c := testCheckpoint(t)
	s, err := format.SignCosignature(witnessName, witnessKey(), c, 5)
	if err != nil {
		t.Fatal(err)
	}
	good := s.Line()
	b64 := good[strings.LastIndexByte(good, ' ')+1:]
	raw := mustBase64(t, b64)
	huge := bytes.Clone(raw)
	huge[4] = 0x80 // time ≥ 2^63
	for name, line := range map[string]string{
		"hyphen for dash":  "-" + strings.TrimPrefix(good, "—"),
		"two spaces":       strings.Replace(good, " ", "  ", 1),
		"empty name":       "—  " + b64,
		"plus in name":     "— a+b " + b64,
		"log signature":    "— " + witnessName + " " + encode(raw[:68]),
		"trailing byte":    "— " + witnessName + " " + encode(append(bytes.Clone(raw), 0)),
		"time over 2^63-1": "— " + witnessName + " " + encode(huge),
		"unpadded":         strings.TrimRight(good, "="),
		"final newline":    good + "\n",
	} {
		if p, err := format.ParseCosignature(line); err == nil {
			t.Errorf("%s: accepted as %+v", name, p)
		}
	}
	for name, body := range map[string]string{
		"empty":           "",
		"no newline":      good,
		"blank line":      good + "\n\n",
		"too many lines":  strings.Repeat(good+"\n", format.MaxCosignatures+1),
		"a bad line":      good + "\n— x AAAA\n",
		"CRLF":            good + "\r\n",
		"note text ahead": c.Text() + "\n" + good + "\n",
	} {
		if p, err := format.ParseCosignatures([]byte(body)); err == nil {
			t.Errorf("%s: accepted as %+v", name, p)
		}
	}
	if _, err := format.SignCosignature(witnessName, witnessKey(), c, math.MaxInt64+1); err == nil {
		t.Error("signed a time over 2^63-1")
	}
}

func TestParseCosignerKey(t *testing.T) {
	w := testCosigner(t)
	vkey, err := keys.CosignatureVerifierKey(w.Name, w.Key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := format.ParseCosignerKey(vkey)
	if err != nil || got.Name != w.Name || !got.Key.Equal(w.Key) {
		t.Fatalf("ParseCosignerKey(%q) = %+v, %v", vkey, got, err)
	}
	logKey, err := keys.NoteVerifierKey(w.Name, w.Key)
	if err != nil {
		t.Fatal(err)
	}
	name, id, key := splitVkey(vkey)
	for label, bad := range map[string]string{
		"a log key (type 0x01)": logKey,
		"short key ID":          name + "+" + id[1:] + "+" + key,
		"other key ID":          name + "+00000000+" + key,
		"other name":            "witness.test/w2+" + id + "+" + key,
		"short key":             name + "+" + id + "+" + key[:20],
		"no key":                name + "+" + id,
		"empty":                 "",
	} {
		if _, err := format.ParseCosignerKey(bad); err == nil {
			t.Errorf("%s: accepted %q", label, bad)
		}
	}
}

func splitVkey(v string) (name, id, key string) {
	parts := strings.SplitN(v, "+", 3)
	return parts[0], parts[1], parts[2]
}
