// Package wiretest makes the gossip messages tests send, signed as an observer signs them.
package wiretest

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/histor-observer/histor/gossip/wire"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
)

// Head is a head message of the log whose key is priv under origin: its tree head at size
// with root, signed at at, and the checkpoint of the same tree.
func Head(t testing.TB, priv ed25519.PrivateKey, origin string, size uint64, root [32]byte, at time.Time) []byte {
	t.Helper()
	pub := priv.Public().(ed25519.PublicKey)
	sth, err := format.SignSTH(priv, awr.DIDKey(pub), size, root, at)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := keys.NoteSigner(origin, priv)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := format.SignCheckpoint(signer, format.Checkpoint{Origin: origin, Size: size, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	return wire.EncodeHead(sth, cp)
}

// VerifiedHead is Head as gossip verifies it.
func VerifiedHead(t testing.TB, priv ed25519.PrivateKey, origin string, size uint64, root [32]byte, at time.Time) *wire.Head {
	t.Helper()
	h, err := wire.VerifyHead(Head(t, priv, origin, size, root, at), priv.Public().(ed25519.PublicKey), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
