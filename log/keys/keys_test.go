package keys

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
)

func testSeed(t *testing.T) *Seed {
	t.Helper()
	b := make([]byte, SeedSize)
	for i := range b {
		b[i] = byte(i)
	}
	s, err := NewSeed(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGenerateLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seed")
	s, err := Generate(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode = %04o, want 0600", info.Mode().Perm())
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.b != s.b {
		t.Error("loaded seed differs from generated seed")
	}
	if !s.LogKey().Equal(got.LogKey()) {
		t.Error("log key differs after reload")
	}
}

func TestGenerateIsRandom(t *testing.T) {
	dir := t.TempDir()
	a, err := Generate(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(filepath.Join(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	if a.b == b.b {
		t.Error("two generated seeds are equal")
	}
}

func TestGenerateRefusesExisting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seed")
	if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Generate(path)
	assertProblem(t, err, ProblemExists)
	b, _ := os.ReadFile(path)
	if string(b) != "keep me" {
		t.Errorf("existing file was changed to %q", b)
	}
}

func assertProblem(t *testing.T, err error, want Problem) {
	t.Helper()
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Fatalf("error = %v, want *FileError with %v", err, want)
	}
	if fe.Problem != want {
		t.Fatalf("problem = %v, want %v (%v)", fe.Problem, want, err)
	}
}

func TestLoadRefuses(t *testing.T) {
	good := bytes.Repeat([]byte{7}, SeedSize)
	cases := []struct {
		name string
		data []byte
		mode os.FileMode
		want Problem
	}{
		{"short", good[:31], 0o600, ProblemSize},
		{"long", append(good, '\n'), 0o600, ProblemSize},
		{"empty", nil, 0o600, ProblemSize},
		{"group readable", good, 0o640, ProblemMode},
		{"other readable", good, 0o604, ProblemMode},
		{"group writable", good, 0o620, ProblemMode},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "seed")
			if err := os.WriteFile(path, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			assertProblem(t, err, c.want)
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestLoadRefusesLinkAndDir(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real")
	if err := os.WriteFile(target, bytes.Repeat([]byte{1}, SeedSize), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("cannot make a symlink here: %v", err)
	}
	_, err := Load(link)
	assertProblem(t, err, ProblemNotRegular)
	_, err = Load(dir)
	assertProblem(t, err, ProblemNotRegular)
}

func TestLoadAcceptsOwnerOnlyModes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seed")
	if err := os.WriteFile(path, bytes.Repeat([]byte{9}, SeedSize), 0o400); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Errorf("0400 seed refused: %v", err)
	}
}

func TestLoadMissing(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error = %v, want not-exist", err)
	}
}

func TestNewSeedSize(t *testing.T) {
	for _, n := range []int{0, 31, 33, 64} {
		if _, err := NewSeed(make([]byte, n)); err == nil {
			t.Errorf("NewSeed accepted %d bytes", n)
		}
	}
}

func TestDerivedKeysDeterministicAndDistinct(t *testing.T) {
	s := testSeed(t)
	again := testSeed(t)
	keys := map[string]ed25519.PrivateKey{
		"log":     s.LogKey(),
		"witness": s.WitnessKey(),
		"p2p":     s.P2PKey(),
		"seed":    ed25519.NewKeyFromSeed(s.b[:]), // the raw seed is never a derived key
	}
	if !keys["log"].Equal(again.LogKey()) || !keys["witness"].Equal(again.WitnessKey()) ||
		!keys["p2p"].Equal(again.P2PKey()) {
		t.Error("derivation is not deterministic")
	}
	seen := map[string]string{}
	for name, k := range keys {
		pub := string(k.Public().(ed25519.PublicKey))
		if other, ok := seen[pub]; ok {
			t.Errorf("%s and %s keys are equal", name, other)
		}
		seen[pub] = name
	}
	other, _ := NewSeed(bytes.Repeat([]byte{0xff}, SeedSize))
	if other.LogKey().Equal(s.LogKey()) {
		t.Error("different seeds give the same log key")
	}
}

// TestDeriveMatchesHKDFDefinition recomputes one derivation from RFC 5869's
// definition (one HMAC block: T(1) = HMAC(PRK, info ‖ 0x01), PRK =
// HMAC(zero salt, IKM)) so the label wiring is checked against more than
// itself.
func TestDeriveMatchesHKDFDefinition(t *testing.T) {
	s := testSeed(t)
	prk := hmacSHA256(make([]byte, 32), s.b[:])
	okm := hmacSHA256(prk, append([]byte(LabelLogSigning), 1))
	want := ed25519.NewKeyFromSeed(okm[:32])
	if !s.LogKey().Equal(want) {
		t.Error("LogKey is not HKDF-SHA256(seed, info=LabelLogSigning)")
	}
}

// TestNoteVerifierKeySpecVector checks key-ID computation against the
// c2sp.org/signed-note example verifier key.
func TestNoteVerifierKeySpecVector(t *testing.T) {
	const vk = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
	raw, err := base64.StdEncoding.DecodeString(strings.Split(vk, "+")[2])
	if err != nil {
		t.Fatal(err)
	}
	if raw[0] != 0x01 || len(raw) != 33 {
		t.Fatalf("vector is not an Ed25519 vkey")
	}
	got, err := NoteVerifierKey("example.com/foo", ed25519.PublicKey(raw[1:]))
	if err != nil {
		t.Fatal(err)
	}
	if got != vk {
		t.Errorf("NoteVerifierKey = %s, want %s", got, vk)
	}
}

func TestNoteSignerVerifiesWithSumdbNote(t *testing.T) {
	priv := testSeed(t).LogKey()
	name := "example.com/histor"
	signer, err := NoteSigner(name, priv)
	if err != nil {
		t.Fatal(err)
	}
	vk, err := NoteVerifierKey(name, priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := note.NewVerifier(vk)
	if err != nil {
		t.Fatalf("sumdb note refuses our vkey: %v", err)
	}
	msg, err := note.Sign(&note.Note{Text: "example.com/histor\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"}, signer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(msg, note.VerifierList(verifier)); err != nil {
		t.Errorf("note.Open: %v", err)
	}
}

// TestCosignatureVerifierKeyMatchesTorchwood compares against an independent
// cosignature/v1 implementation.
func TestCosignatureVerifierKeyMatchesTorchwood(t *testing.T) {
	for _, name := range []string{"example.com/witness", "w", "witness.example.org/ü"} {
		priv := testSeed(t).WitnessKey()
		ref, err := torchwood.NewCosignatureSigner(name, priv)
		if err != nil {
			t.Fatal(err)
		}
		got, err := CosignatureVerifierKey(name, priv.Public().(ed25519.PublicKey))
		if err != nil {
			t.Fatal(err)
		}
		if want := ref.Verifier().String(); got != want {
			t.Errorf("CosignatureVerifierKey(%q) = %s, torchwood says %s", name, got, want)
		}
	}
}

func TestCosignatureAndNoteKeyIDsDiffer(t *testing.T) {
	pub := testSeed(t).WitnessKey().Public().(ed25519.PublicKey)
	if KeyID("w", typeEd25519, pub) == KeyID("w", typeCosignatureV1, pub) {
		t.Error("key ID does not depend on the signature type")
	}
}

func TestBadNamesRefused(t *testing.T) {
	priv := testSeed(t).LogKey()
	pub := priv.Public().(ed25519.PublicKey)
	for _, name := range []string{"", "a b", "a+b", "a\tb", "\xff"} {
		var ne *NameError
		if _, err := NoteVerifierKey(name, pub); !errors.As(err, &ne) {
			t.Errorf("NoteVerifierKey(%q) error = %v, want *NameError", name, err)
		}
		if _, err := CosignatureVerifierKey(name, pub); !errors.As(err, &ne) {
			t.Errorf("CosignatureVerifierKey(%q) error = %v, want *NameError", name, err)
		}
		if _, err := NoteSigner(name, priv); !errors.As(err, &ne) {
			t.Errorf("NoteSigner(%q) error = %v, want *NameError", name, err)
		}
	}
	if _, err := NoteVerifierKey("ok", pub[:31]); err == nil {
		t.Error("short public key accepted")
	}
}

func BenchmarkDerive(b *testing.B) {
	s, _ := NewSeed(make([]byte, SeedSize))
	for b.Loop() {
		s.LogKey()
	}
}
