package format_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
)

func testObserver(t testing.TB) (format.Observer, *keys.Seed) {
	t.Helper()
	seed, err := keys.NewSeed(bytes.Repeat([]byte{3}, keys.SeedSize))
	if err != nil {
		t.Fatal(err)
	}
	w, err := format.NewCosigner("histor.test/witness", seed.WitnessKey().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return format.Observer{
		Origin:  testOrigin,
		Witness: w,
		P2PKey:  seed.P2PKey().Public().(ed25519.PublicKey),
		Addrs:   []string{"/ip4/192.0.2.1/tcp/4001", "/ip6/2001:db8::1/udp/4001/quic-v1", "/dns4/histor.test/tcp/4001"},
		URL:     "https://histor.test",
		Time:    1764547200,
	}, seed
}

func signedObserver(t testing.TB) ([]byte, *keys.Seed) {
	t.Helper()
	o, seed := testObserver(t)
	msg, err := format.SignObserver(seed.LogKey(), o)
	if err != nil {
		t.Fatal(err)
	}
	return msg, seed
}

func TestObserverRoundTrip(t *testing.T) {
	msg, seed := signedObserver(t)
	pub := seed.LogKey().Public().(ed25519.PublicKey)
	o, err := format.VerifyObserver(msg, awr.DIDKey(pub))
	if err != nil {
		t.Fatalf("VerifyObserver: %v\n%s", err, msg)
	}
	want, _ := testObserver(t)
	if o.Origin != want.Origin || !o.LogKey.Equal(pub) || !o.P2PKey.Equal(want.P2PKey) ||
		o.Witness.Name != want.Witness.Name || !o.Witness.Key.Equal(want.Witness.Key) ||
		strings.Join(o.Addrs, ",") != strings.Join(want.Addrs, ",") || o.URL != want.URL || o.Time != want.Time {
		t.Errorf("parsed %+v, want %+v", o, want)
	}
	if !strings.HasPrefix(string(msg), format.ObserverType+"\norigin "+testOrigin+"\n") {
		t.Errorf("descriptor does not open with its type and origin:\n%s", msg)
	}
	// The descriptor is a plain signed note under the log's checkpoint verifier key.
	v, _ := format.NewVerifier(testOrigin, pub)
	if _, err := note.Open(msg, note.VerifierList(v)); err != nil {
		t.Errorf("sumdb note refuses the descriptor: %v", err)
	}
	if _, err := format.VerifyObserver(msg, awr.DIDKey(testPub())); err == nil {
		t.Error("descriptor accepted as another DID's")
	}
	// A descriptor is never a checkpoint.
	if _, err := format.ParseCheckpoint(msg, v); err == nil {
		t.Error("descriptor parsed as a checkpoint")
	}
}

// TestPeerIDVector: one key in its three encodings, cross-checked with libp2p's own tools.
func TestPeerIDVector(t *testing.T) {
	const (
		vkey = "example.org/observer+35c5ae03+Ab8icD4uDWCmXcb8ixpHsdQWp+EmW0HAoDsZVlFdc6D9"
		did  = "did:key:z6MksKNNc18KiCFpquNwq3TCKXef2W9V1AQR5MZzcUdTiV6c"
		pid  = "12D3KooWNgUVktTbZZ2r9J3fn5EhFEBVhFvGcyEYLw26ABpLhD3A"
	)
	raw, _ := base64.StdEncoding.DecodeString(strings.SplitN(vkey, "+", 3)[2])
	pub := ed25519.PublicKey(raw[1:])
	if got := format.PeerIDFromKey(pub); got != pid {
		t.Errorf("PeerIDFromKey = %s, want %s", got, pid)
	}
	if got := awr.DIDKey(pub); got != did {
		t.Errorf("DIDKey = %s, want %s", got, did)
	}
	back, err := format.ParsePeerID(pid)
	if err != nil || !back.Equal(pub) {
		t.Errorf("ParsePeerID = %x, %v", back, err)
	}
	for _, bad := range []string{"", pid[:len(pid)-1], pid + "1", "QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N", "0" + pid} {
		if _, err := format.ParsePeerID(bad); err == nil {
			t.Errorf("ParsePeerID(%q) accepted", bad)
		}
	}
}

// TestObserverMangle: no changed byte keeps a descriptor valid.
func TestObserverMangle(t *testing.T) {
	msg, _ := signedObserver(t)
	for i := range msg {
		for _, mask := range []byte{0x01, 0x20, 0x80} {
			m := bytes.Clone(msg)
			m[i] ^= mask
			if o, err := format.ParseObserver(m); err == nil {
				t.Errorf("byte %d ^ %#x accepted as %+v:\n%s", i, mask, o, m)
			}
		}
	}
}

func TestObserverBadSignature(t *testing.T) {
	msg, _ := signedObserver(t)
	forged := bytes.Clone(msg)
	forged[len(forged)-10] ^= 'A' ^ 'B'
	if _, err := format.ParseObserver(forged); !errors.Is(err, format.ErrSignature) {
		t.Errorf("forged signature: %v, want ErrSignature", err)
	}
}

func TestObserverRefusedFields(t *testing.T) {
	base, seed := testObserver(t)
	cases := []struct {
		name string
		edit func(o *format.Observer)
	}{
		{"origin with space", func(o *format.Observer) { o.Origin = "a b" }},
		{"host key is log key", func(o *format.Observer) { o.P2PKey = seed.LogKey().Public().(ed25519.PublicKey) }},
		{"witness key is host key", func(o *format.Observer) { o.Witness.Key = o.P2PKey }},
		{"http url", func(o *format.Observer) { o.URL = "http://histor.test" }},
		{"url with query", func(o *format.Observer) { o.URL = "https://histor.test/?a=1" }},
		{"url with user", func(o *format.Observer) { o.URL = "https://u@histor.test" }},
		{"upper-case host", func(o *format.Observer) { o.URL = "https://Histor.test" }},
		{"repeated addr", func(o *format.Observer) { o.Addrs = []string{"/ip4/192.0.2.1/tcp/1", "/ip4/192.0.2.1/tcp/1"} }},
		{"websocket", func(o *format.Observer) { o.Addrs = []string{"/ip4/192.0.2.1/tcp/1/ws"} }},
		{"p2p part", func(o *format.Observer) { o.Addrs = []string{"/ip4/192.0.2.1/tcp/1/p2p/" + o.PeerID()} }},
		{"port 0", func(o *format.Observer) { o.Addrs = []string{"/ip4/192.0.2.1/tcp/0"} }},
		{"port 01", func(o *format.Observer) { o.Addrs = []string{"/ip4/192.0.2.1/tcp/01"} }},
		{"ip6 not canonical", func(o *format.Observer) { o.Addrs = []string{"/ip6/2001:DB8::1/tcp/1"} }},
		{"ip4 in ip6", func(o *format.Observer) { o.Addrs = []string{"/ip6/192.0.2.1/tcp/1"} }},
		{"quic draft", func(o *format.Observer) { o.Addrs = []string{"/ip4/192.0.2.1/udp/1/quic"} }},
		{"too many addrs", func(o *format.Observer) {
			o.Addrs = nil
			for i := range format.MaxObserverAddrs + 1 {
				o.Addrs = append(o.Addrs, "/ip4/192.0.2.1/tcp/"+string(rune('1'+i)))
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := base
			o.Addrs = append([]string(nil), base.Addrs...)
			c.edit(&o)
			if msg, err := format.SignObserver(seed.LogKey(), o); err == nil {
				t.Errorf("signed:\n%s", msg)
			}
		})
	}
	none := base
	none.Addrs = nil
	if _, err := format.SignObserver(seed.LogKey(), none); err != nil {
		t.Errorf("a descriptor without addresses (a client-only observer): %v", err)
	}
}

// TestObserverExtraSignature: a descriptor carries the log key's signature only.
func TestObserverExtraSignature(t *testing.T) {
	msg, _ := signedObserver(t)
	other, err := keys.NoteSigner("someone.else", testKey())
	if err != nil {
		t.Fatal(err)
	}
	o, _ := format.ParseObserver(msg)
	text, _ := o.Text()
	n, err := note.Sign(&note.Note{Text: text}, other)
	if err != nil {
		t.Fatal(err)
	}
	both := append(bytes.Clone(msg), n[len(text)+1:]...)
	if _, err := format.ParseObserver(both); err == nil {
		t.Error("descriptor with a second signature accepted")
	}
}

func FuzzParseObserver(f *testing.F) {
	msg, _ := signedObserver(f)
	f.Add(msg)
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := format.ParseObserver(b)
		if err != nil {
			return
		}
		if text, err := o.Text(); err != nil || !bytes.HasPrefix(b, []byte(text+"\n")) {
			t.Errorf("accepted descriptor does not render back: %v", err)
		}
	})
}
