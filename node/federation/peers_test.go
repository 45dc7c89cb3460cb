package federation

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"testing"
	"time"

	"github.com/histor-observer/histor/gossip"
	"github.com/histor-observer/histor/gossip/wire/wiretest"
	"github.com/histor-observer/histor/log/awr"
)

// peerHead is a head message of the log key priv under origin, verified
// as gossip verifies it.
func peerHead(t *testing.T, priv ed25519.PrivateKey, origin string, size uint64, root byte) *gossip.Head {
	t.Helper()
	return wiretest.VerifiedHead(t, priv, origin, size, [32]byte{root}, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
}

// TestPeerHeadRules: a peer is known under the first origin its heads
// name, and a peer this node holds evidence about makes no more of it.
func TestPeerHeadRules(t *testing.T) {
	f := New(Config{Logger: slog.New(slog.DiscardHandler)})
	_, priv, _ := ed25519.GenerateKey(nil)
	did := awr.DIDKey(priv.Public().(ed25519.PublicKey))
	ctx := context.Background()

	f.checkPeerHead(ctx, peerHead(t, priv, "peer.example/log", 1, 1))
	f.checkPeerHead(ctx, peerHead(t, priv, "elsewhere.example/log", 1, 2)) // another origin: ignored
	if h := f.verifiedHead(did); h == nil || h.Checkpoint.Origin != "peer.example/log" {
		t.Fatalf("checked head %+v, want the first origin's", h)
	}
	if len(f.evidence) != 0 {
		t.Fatal("a head under another origin made evidence")
	}
	f.checkPeerHead(ctx, peerHead(t, priv, "peer.example/log", 1, 3)) // same size, other root
	if len(f.evidence) != 1 || !f.forked[did] {
		t.Fatalf("a fork made %d bundles (forked %v), want 1", len(f.evidence), f.forked[did])
	}
	f.checkPeerHead(ctx, peerHead(t, priv, "peer.example/log", 1, 4))
	if len(f.evidence) != 1 {
		t.Fatalf("a forked peer's next head made another bundle: %d", len(f.evidence))
	}
}
