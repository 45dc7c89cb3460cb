package gossip

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
)

func TestConverge(t *testing.T) {
	c := newCluster(t, 3, nil)
	for i, o := range c.obs {
		c.logs[i].set(o.head(t, uint64(i+1), 0))
	}
	c.start(t)
	// Every node pulls every peer's head on connect.
	for i, nd := range c.nodes {
		for j, o := range c.obs {
			if i != j {
				eventually(t, "pulled heads", 10*time.Second, func() bool { return sees(nd, o, uint64(j+1)) })
			}
		}
	}
	// A new head reaches the others by gossip.
	c.logs[0].set(c.obs[0].head(t, 10, 0))
	eventually(t, "gossiped head", 10*time.Second, func() bool {
		if err := c.nodes[0].PublishHead(context.Background()); err != nil {
			t.Fatal(err)
		}
		return sees(c.nodes[1], c.obs[0], 10) && sees(c.nodes[2], c.obs[0], 10)
	})
}

// TestProtocols runs each request/response protocol against the fake log.
func TestProtocols(t *testing.T) {
	c := newCluster(t, 2, func(i int, cfg *Config) {
		cfg.AddCheckpoint = func(_ context.Context, did string, req []byte) (int, []byte) {
			return 409, append([]byte(did+" "), req...)
		}
	})
	c.logs[1].set(c.obs[1].head(t, 3, 0))
	c.start(t)
	ctx := context.Background()
	a, peerDID := c.nodes[0], c.obs[1].did
	eventually(t, "connection", 10*time.Second, func() bool { return len(c.hosts[0].Network().Peers()) == 1 })
	h, err := a.LatestHead(ctx, peerDID)
	if err != nil || h.STH.TreeSize != 3 {
		t.Fatalf("LatestHead = %v, %v", h, err)
	}
	p, err := a.ConsistencyProof(ctx, peerDID, 2, 3)
	if err != nil || len(p) != 2 || p[0][0] != 2 || p[1][0] != 3 {
		t.Errorf("ConsistencyProof = %v, %v", p, err)
	}
	var se *StatusError
	if _, err := a.ConsistencyProof(ctx, peerDID, 2, 101); !errors.As(err, &se) || se.Status != 404 {
		t.Errorf("proof beyond the log: %v, want 404", err)
	}
	if _, err := a.ConsistencyProof(ctx, peerDID, 3, 2); !errors.As(err, &se) || se.Status != 400 {
		t.Errorf("reversed sizes: %v, want 400", err)
	}
	if p, err := a.InclusionProof(ctx, peerDID, 1, 3); err != nil || len(p) != 1 || p[0][0] != 1 {
		t.Errorf("InclusionProof = %v, %v", p, err)
	}
	if i, label, err := a.Label(ctx, peerDID, "urn:uuid:1"); err != nil || i != 7 || string(label) != `{"id":"urn:uuid:1"}` {
		t.Errorf("Label = %d, %q, %v", i, label, err)
	}
	if _, _, err := a.Label(ctx, peerDID, "urn:uuid:2"); !errors.As(err, &se) || se.Status != 404 {
		t.Errorf("missing label: %v, want 404", err)
	}
	status, body, err := a.AddCheckpoint(ctx, peerDID, []byte("old 1\n"))
	if err != nil || status != 409 || string(body) != c.obs[0].did+" old 1\n" {
		t.Errorf("AddCheckpoint = %d, %q, %v", status, body, err)
	}
	if _, err := a.LatestHead(ctx, "did:key:z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd"); err == nil {
		t.Error("LatestHead of a non-peer succeeded")
	}
}

// countingLog counts the requests a peer's questions reach.
type countingLog struct {
	*fakeLog
	calls atomic.Int64
}

func (l *countingLog) ConsistencyProof(first, second uint64) ([][32]byte, error) {
	l.calls.Add(1)
	return l.fakeLog.ConsistencyProof(first, second)
}

func (l *countingLog) InclusionProof(index, size uint64) ([][32]byte, error) {
	l.calls.Add(1)
	return l.fakeLog.InclusionProof(index, size)
}

func (l *countingLog) Label(id string) (uint64, []byte, error) {
	l.calls.Add(1)
	return l.fakeLog.Label(id)
}

// TestOutsiderRefused: a host that is no federation peer gets no answer from any protocol,
// even where no gater runs (mocknet), and none of its requests reaches the log, the witness
// or the fetch handler. A member asking the same questions is answered, so a node that
// answered no one would fail here.
func TestOutsiderRefused(t *testing.T) {
	var reached atomic.Int64
	log := &countingLog{fakeLog: &fakeLog{}}
	c := newCluster(t, 2, func(i int, cfg *Config) {
		if i != 0 {
			return
		}
		cfg.Log = log
		cfg.AddCheckpoint = func(context.Context, string, []byte) (int, []byte) { reached.Add(1); return 200, []byte("ok") }
		cfg.Fetch = func(context.Context, string, string) (int, []byte) { reached.Add(1); return 200, []byte("ok") }
	})
	log.set(c.obs[0].head(t, 1, 0))
	c.start(t)
	stranger := newObserver(t, 9)
	sh := mockHost(t, c.mn, stranger, 9)
	if _, err := c.mn.LinkPeers(sh.ID(), c.hosts[0].ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.mn.ConnectPeers(sh.ID(), c.hosts[0].ID()); err != nil {
		t.Fatal(err)
	}
	requests := map[protocol.ID]string{
		ProtoHead: "", ProtoDescriptor: "", ProtoTime: "",
		ProtoConsistency: "1 2\n", ProtoInclusion: "0 1\n", ProtoLabel: "urn:uuid:1\n",
		ProtoFetch: "/log/checkpoint\n", ProtoAddCheckpoint: "old 0\n\n",
	}
	// ask sends proto's request from h; an error is the stream's, opened or read.
	ask := func(h host.Host, proto protocol.ID) ([]byte, error) {
		s, err := h.NewStream(context.Background(), c.hosts[0].ID(), proto)
		if err != nil {
			return nil, fmt.Errorf("opening a stream: %w", err)
		}
		s.SetDeadline(time.Now().Add(5 * time.Second))
		s.Write([]byte(requests[proto]))
		s.CloseWrite()
		return io.ReadAll(s)
	}
	for proto := range requests {
		b, err := ask(sh, proto)
		// The guard resets the stream, which the stranger meets while negotiating or reading;
		// any other error (a protocol the node does not serve) would leave the guard untried.
		if err == nil || len(b) > 0 || !strings.Contains(err.Error(), "reset") {
			t.Errorf("%s answered a stranger, or not by a reset: %q, %v", proto, b, err)
		}
	}
	if n := log.calls.Load() + reached.Load(); n != 0 {
		t.Errorf("%d of a stranger's requests reached a handler", n)
	}
	eventually(t, "the member connected", 10*time.Second, func() bool {
		return c.hosts[1].Network().Connectedness(c.hosts[0].ID()) == network.Connected
	})
	for proto := range requests {
		if b, err := ask(c.hosts[1], proto); err != nil || len(b) == 0 {
			t.Errorf("%s gave a member no answer: %q, %v", proto, b, err)
		}
	}
	if log.calls.Load() != 3 || reached.Load() != 2 {
		t.Errorf("a member reached the log %d times (want 3) and the witness and fetch %d (want 2)", log.calls.Load(), reached.Load())
	}
}
