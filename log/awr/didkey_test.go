package awr

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
)

// demoKey is the published demonstration key of the MTL/1 vectors.
func demoKey() ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

const demoDID = "did:key:z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd"

func TestDIDKeyVector(t *testing.T) {
	pub := demoKey().Public().(ed25519.PublicKey)
	if got := DIDKey(pub); got != demoDID {
		t.Fatalf("DIDKey = %s, want %s", got, demoDID)
	}
	back, err := ParseDIDKey(demoDID)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(pub) {
		t.Error("ParseDIDKey does not return the key")
	}
	wantVM := demoDID + "#z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd"
	if got := VerificationMethod(demoDID); got != wantVM {
		t.Errorf("VerificationMethod = %s, want %s", got, wantVM)
	}
}

// TestParseThirdPartyDIDs reads Ed25519 did:keys published by others (the
// did:key method spec examples) and writes each back unchanged.
func TestParseThirdPartyDIDs(t *testing.T) {
	for _, did := range []string{
		"did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp",
		"did:key:z6MknGc3ocHs3zdPiJbnaaqDi58NGb4pk1Sp9WxWufuXSdxf",
		"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
	} {
		pub, err := ParseDIDKey(did)
		if err != nil {
			t.Errorf("ParseDIDKey(%s): %v", did, err)
			continue
		}
		if got := DIDKey(pub); got != did {
			t.Errorf("DIDKey(ParseDIDKey(%s)) = %s", did, got)
		}
	}
}

func TestParseDIDKeyRefuses(t *testing.T) {
	x25519 := "did:key:z" + base58Encode(append([]byte{0xec, 0x01}, make([]byte, 32)...))
	long := "did:key:z" + base58Encode(append([]byte{0xed, 0x01}, make([]byte, 33)...))
	short := "did:key:z" + base58Encode(append([]byte{0xed, 0x01}, make([]byte, 31)...))
	cases := map[string]string{
		"empty":           "",
		"other method":    "did:web:example.com",
		"with fragment":   demoDID + "#" + demoDID[8:],
		"with query":      demoDID + "?x=1",
		"base64 prefix":   "did:key:m" + demoDID[9:],
		"bad base58 char": demoDID[:20] + "0" + demoDID[21:],
		"uppercase":       strings.ToUpper(demoDID),
		"x25519 key":      x25519,
		"33-byte key":     long,
		"31-byte key":     short,
		"just prefix":     "did:key:z",
		"leading 1":       "did:key:z1" + demoDID[9:],
	}
	for name, did := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseDIDKey(did)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("ParseDIDKey(%q) error = %v, want *FormatError", did, err)
			}
			if !strings.HasPrefix(fe.Code, "AWR-KEY-") {
				t.Errorf("code = %s, want AWR-KEY-*", fe.Code)
			}
		})
	}
}

func TestBase58RoundTrip(t *testing.T) {
	inputs := [][]byte{{0}, {0, 0, 1}, {0xff}, bytes.Repeat([]byte{0xab}, 64), {0, 0xed, 0x01}}
	for _, in := range inputs {
		s := base58Encode(in)
		out, err := base58Decode(s)
		if err != nil || !bytes.Equal(in, out) {
			t.Errorf("round trip of %x via %q gave %x, %v", in, s, out, err)
		}
	}
	// Known value from the Bitcoin base58 test vectors.
	if got := base58Encode([]byte("Hello World!")); got != "2NEpo7TZRRrLZSi2U" {
		t.Errorf("base58(\"Hello World!\") = %s", got)
	}
	for _, bad := range []string{"", "0", "O", "I", "l", "+", " 1"} {
		if _, err := base58Decode(bad); err == nil {
			t.Errorf("base58Decode(%q) accepted", bad)
		}
	}
}

func FuzzParseDIDKey(f *testing.F) {
	f.Add(demoDID)
	f.Add("did:key:z6Mk")
	f.Fuzz(func(t *testing.T, did string) {
		pub, err := ParseDIDKey(did)
		if err != nil {
			return
		}
		if DIDKey(pub) != did {
			t.Errorf("ParseDIDKey accepted %q, which is not the canonical DID %q", did, DIDKey(pub))
		}
	})
}
