package wire_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/histor-observer/histor/gossip/wire"
	"github.com/histor-observer/histor/gossip/wire/wiretest"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
)

const origin = "histor.test/log"

func key() ed25519.PrivateKey { return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{5}, 32)) }
func pub() ed25519.PublicKey  { return key().Public().(ed25519.PublicKey) }

func observation(t testing.TB) (wire.Observation, []byte) {
	t.Helper()
	o := wire.Observation{
		Observer: awr.DIDKey(pub()), Server: "io.github.example/server", Endpoint: "https://mcp.example/mcp",
		Digest: "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", ObservedAt: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		LabelID: "urn:uuid:00000000-0000-4000-8000-000000000001", LeafIndex: 41, TreeSize: 42,
	}
	msg, err := wire.SignObservation(origin, key(), o)
	if err != nil {
		t.Fatal(err)
	}
	return o, msg
}

func TestObservationRoundTrip(t *testing.T) {
	want, msg := observation(t)
	got, err := wire.VerifyObservation(msg, pub(), origin)
	if err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	if got.Origin != origin || got.Server != want.Server || got.Digest != want.Digest || got.LeafIndex != 41 ||
		!got.ObservedAt.Equal(want.ObservedAt) || !bytes.Equal(got.Raw, msg) {
		t.Errorf("got %+v", got)
	}
	if got, err := wire.VerifyObservation(msg, pub(), ""); err != nil || got.Origin != origin {
		t.Errorf("any-origin verify: %v, %v", got, err)
	}
	if _, err := wire.VerifyObservation(msg, pub(), "other.test/log"); err == nil {
		t.Error("verified under another origin")
	}
	other := ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey)
	if _, err := wire.VerifyObservation(msg, other, ""); err == nil {
		t.Error("verified under another key")
	}
}

func TestObservationMangle(t *testing.T) {
	_, msg := observation(t)
	for i := range msg {
		m := bytes.Clone(msg)
		m[i] ^= 0x01
		if o, err := wire.VerifyObservation(m, pub(), ""); err == nil {
			t.Errorf("byte %d changed, accepted as %+v", i, o)
		}
	}
	forged := bytes.Clone(msg)
	forged[len(forged)-10] ^= 'A' ^ 'B'
	if _, err := wire.VerifyObservation(forged, pub(), origin); !errors.Is(err, wire.ErrSignature) {
		t.Errorf("forged signature: %v, want ErrSignature", err)
	}
}

func TestObservationRefused(t *testing.T) {
	base, _ := observation(t)
	for name, edit := range map[string]func(*wire.Observation){
		"both subjects":     func(o *wire.Observation) { o.Package = "npm:x@1" },
		"no subject":        func(o *wire.Observation) { o.Endpoint = "" },
		"digest and status": func(o *wire.Observation) { o.Status = "unreachable" },
		"bad digest":        func(o *wire.Observation) { o.Digest = "sha512-abc" },
		"status upper":      func(o *wire.Observation) { o.Digest, o.Status = "", "Down" },
		"leaf at size":      func(o *wire.Observation) { o.LeafIndex = 42 },
		"space in server":   func(o *wire.Observation) { o.Server = "a b" },
		"fractional time":   func(o *wire.Observation) { o.ObservedAt = o.ObservedAt.Add(time.Millisecond) },
	} {
		o := base
		edit(&o)
		if _, err := wire.SignObservation(origin, key(), o); err == nil {
			t.Errorf("%s: signed", name)
		}
	}
}

func head(t testing.TB, size uint64) []byte {
	t.Helper()
	return wiretest.Head(t, key(), origin, size, sha256.Sum256([]byte{byte(size)}), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
}

func TestHeadCosignatures(t *testing.T) {
	msg := head(t, 3)
	wkey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{6}, 32))
	w, _ := format.NewCosigner("histor.test/witness", wkey.Public().(ed25519.PublicKey))
	h, err := wire.VerifyHead(msg, pub(), origin, []format.Cosigner{w})
	if err != nil || len(h.Cosigners) != 0 {
		t.Fatalf("VerifyHead = %+v, %v", h, err)
	}
	cs, _ := format.SignCosignature(w.Name, wkey, h.Checkpoint, 100)
	cosigned := append(bytes.Clone(msg), cs.Line()+"\n"...)
	if h, err := wire.VerifyHead(cosigned, pub(), "", []format.Cosigner{w}); err != nil || len(h.Cosigners) != 1 {
		t.Errorf("cosigned head: %+v, %v", h, err)
	}
	cs.Time++ // now the line claims the witness but does not verify
	bad := append(bytes.Clone(msg), cs.Line()+"\n"...)
	if _, err := wire.VerifyHead(bad, pub(), origin, []format.Cosigner{w}); err == nil {
		t.Error("a failing cosignature of a known witness accepted")
	}
	for i := range msg {
		m := bytes.Clone(msg)
		m[i] ^= 0x01
		if _, err := wire.VerifyHead(m, pub(), origin, nil); err == nil {
			t.Errorf("byte %d changed, head accepted", i)
		}
	}
}

// BenchmarkVerifyHead is the CPU of one head check (two Ed25519 verifies, strict parsing of
// both documents) beside one bare Ed25519 verify.
func BenchmarkVerifyHead(b *testing.B) {
	msg := head(b, 1000)
	b.Run("head", func(b *testing.B) {
		for b.Loop() {
			if _, err := wire.VerifyHead(msg, pub(), origin, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	_, obs := observation(b)
	b.Run("observation", func(b *testing.B) {
		for b.Loop() {
			if _, err := wire.VerifyObservation(obs, pub(), origin); err != nil {
				b.Fatal(err)
			}
		}
	})
	sig := ed25519.Sign(key(), msg)
	b.Run("ed25519", func(b *testing.B) {
		for b.Loop() {
			ed25519.Verify(pub(), msg, sig)
		}
	})
}
