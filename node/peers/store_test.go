package peers_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/gossip/wire"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/mirror"
	"github.com/histor-observer/histor/node/peers"
)

func TestAddRefuses(t *testing.T) {
	self, peer, other, stranger := newObserver(t, 1), newObserver(t, 2), newObserver(t, 3), newObserver(t, 4)
	peer.observe(t, digest("x"), t0) // so the next label has a sibling and a non-empty proof
	good := peer.observe(t, digest("a"), t0.Add(time.Minute))
	obs, err := wire.ParseObservationText(good.Observation)
	if err != nil {
		t.Fatal(err)
	}
	early := peer.log.Latest().Size - 1 // a head that does not hold the label yet
	earlyHead, err := peer.log.HeadAt(early)
	if err != nil {
		t.Fatal(err)
	}
	otherLabel, _, _ := peer.label(t, "io.example/other", digest("a"), obs.ObservedAt)
	otherDigest, _, _ := peer.label(t, serverName, digest("b"), obs.ObservedAt)
	mod := func(f func(p *peers.Proven)) peers.Proven {
		p := good
		p.Proof = append([][32]byte(nil), good.Proof...)
		f(&p)
		return p
	}
	// withObs re-signs the observation with one field changed.
	withObs := func(f func(o *wire.Observation)) peers.Proven {
		o := *obs
		f(&o)
		return peer.prove(t, o, good.Label)
	}
	for _, tc := range []struct {
		name string
		p    peers.Proven
		want error
	}{
		{"stranger", stranger.observe(t, digest("a"), t0), peers.ErrUnknownObserver},
		{"not an observation", mod(func(p *peers.Proven) { p.Observation = []byte("hello\n\n— x y\n") }), peers.ErrMalformed},
		{"another text's signature", mod(func(p *peers.Proven) {
			p.Observation = spliceSignature(good.Observation, peer.observe(t, digest("z"), t0).Observation)
		}), peers.ErrSignature},
		{"head of another log", mod(func(p *peers.Proven) { p.Head = other.observe(t, digest("a"), t0).Head }), peers.ErrSignature},
		{"head before the label", mod(func(p *peers.Proven) { p.Head = earlyHead.STH }), peers.ErrHead},
		{"head not canonical", mod(func(p *peers.Proven) {
			p.Head = bytes.Replace(good.Head, []byte(`"treeSize"`), []byte(`"treeSize" `), 1)
		}), peers.ErrMalformed},
		{"head mangled", mod(func(p *peers.Proven) {
			p.Head = bytes.Replace(good.Head, []byte(`"rootHash":"`), []byte(`"rootHash":"0`), 1)
		}), nil},
		{"proof flipped", mod(func(p *peers.Proven) { p.Proof[0][0] ^= 1 }), peers.ErrNotIncluded},
		{"proof cut", mod(func(p *peers.Proven) { p.Proof = p.Proof[:len(p.Proof)-1] }), peers.ErrNotIncluded},
		{"label of another observer", mod(func(p *peers.Proven) { p.Label = other.observe(t, digest("a"), t0).Label }), peers.ErrMismatch},
		{"label of another server", mod(func(p *peers.Proven) { p.Label = otherLabel }), peers.ErrMismatch},
		{"label of another digest", mod(func(p *peers.Proven) { p.Label = otherDigest }), peers.ErrMismatch},
		{"label not canonical", mod(func(p *peers.Proven) { p.Label = append([]byte(" "), good.Label...) }), peers.ErrMalformed},
		{"label mangled", mod(func(p *peers.Proven) {
			p.Label = bytes.Replace(good.Label, []byte(serverName), []byte("io.example/weathes"), 1)
		}), peers.ErrSignature},
		{"claims another time", withObs(func(o *wire.Observation) { o.ObservedAt = o.ObservedAt.Add(time.Second) }), peers.ErrMismatch},
		{"claims another label id", withObs(func(o *wire.Observation) { o.LabelID = "urn:uuid:00000000-0000-4000-8000-000000000000" }), peers.ErrMismatch},
		{"claims another endpoint", withObs(func(o *wire.Observation) { o.Endpoint = "https://weather.example/other" }), peers.ErrMismatch},
		{"claims another leaf", withObs(func(o *wire.Observation) { o.LeafIndex-- }), peers.ErrNotIncluded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t, "", self, peer, other)
			err := s.Add(tc.p)
			var re *peers.RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("Add = %v, want a *RefusedError", err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Add = %v, want %v", err, tc.want)
			}
			if got := s.Agreement(serverID).Status; got != peers.Unobserved {
				t.Errorf("after a refusal the server is %s", got)
			}
		})
	}
	t.Run("accepted", func(t *testing.T) {
		if err := openStore(t, "", self, peer).Add(good); err != nil {
			t.Fatal(err)
		}
	})
}

// spliceSignature puts the signature lines of from under the text of msg.
func spliceSignature(msg, from []byte) []byte {
	text, _, _ := bytes.Cut(msg, []byte("\n\n"))
	_, sig, _ := bytes.Cut(from, []byte("\n\n"))
	return append(append(bytes.Clone(text), "\n\n"...), sig...)
}

func TestAddOrder(t *testing.T) {
	self, peer := newObserver(t, 1), newObserver(t, 2)
	first := peer.observe(t, digest("a"), t0)
	later := peer.observe(t, digest("b"), t0.Add(time.Hour))
	s := openStore(t, "", self, peer)
	if err := s.Add(later); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(first); !errors.Is(err, peers.ErrStale) {
		t.Errorf("an older observation: %v, want ErrStale", err)
	}
	if err := s.Add(later); err != nil {
		t.Errorf("the same observation again: %v", err)
	}
	// The same label proven under a later head refreshes the proof.
	peer.observe(t, digest("c"), t0) // grow the log; its label is older, so it is not kept
	obs, _ := wire.ParseObservationText(later.Observation)
	refreshed := peer.prove(t, *obs, later.Label)
	if err := s.Add(refreshed); err != nil {
		t.Fatal(err)
	}
	got, err := s.Observers(serverID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Digest != digest("b") || got[0].HeadSize != peer.log.Latest().Size {
		t.Errorf("kept %+v, want digest b at head size %d", got, peer.log.Latest().Size)
	}
}

func TestBoundsAndCheckHead(t *testing.T) {
	self, a, b := newObserver(t, 1), newObserver(t, 2), newObserver(t, 3)
	s, err := peers.Open(peers.Config{Self: self.did, AllowList: []string{a.did, b.did}, MaxObserversPerServer: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Add(a.observe(t, digest("a"), t0)); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(b.observe(t, digest("a"), t0)); !errors.Is(err, peers.ErrFull) {
		t.Errorf("a second observer past the bound: %v, want ErrFull", err)
	}
	if err := s.Add(a.observe(t, digest("b"), t0.Add(time.Hour))); err != nil {
		t.Errorf("a kept observer's next observation: %v", err)
	}

	refuse := errors.New("not the head gossip kept")
	s2, err := peers.Open(peers.Config{Self: self.did, AllowList: []string{a.did},
		CheckHead: func(did string, sth *format.STH) error { return refuse }})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.Add(a.observe(t, digest("a"), t0.Add(2*time.Hour))); !errors.Is(err, peers.ErrHead) || !errors.Is(err, refuse) {
		t.Errorf("a head CheckHead refuses: %v", err)
	}
}

func TestReopen(t *testing.T) {
	self, a, b := newObserver(t, 1), newObserver(t, 2), newObserver(t, 3)
	dir := t.TempDir()
	s, err := peers.Open(peers.Config{Dir: dir, Self: self.did, AllowList: []string{a.did, b.did}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []peers.Proven{a.observe(t, digest("a"), t0), b.observe(t, digest("b"), t0)} {
		if err := s.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := s.Observers(serverID)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, self, a, b)
	after, err := s.Observers(serverID)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 2 || !s.Split(serverID) {
		t.Fatalf("after reopening: %d observers, split %v", len(after), s.Split(serverID))
	}
	for i := range after {
		if after[i].Observation != before[i].Observation || !bytes.Equal(after[i].Label, before[i].Label) ||
			strings.Join(after[i].InclusionProof, ",") != strings.Join(before[i].InclusionProof, ",") {
			t.Errorf("observer %d differs after reopening", i)
		}
	}
}

// TestReopenCountsOnlyTheAllowed: an observer taken off the allow-list between two starts
// (or whose records a failed deletion left) does not count after the reopen.
func TestReopenCountsOnlyTheAllowed(t *testing.T) {
	self, a, b := newObserver(t, 1), newObserver(t, 2), newObserver(t, 3)
	dir := t.TempDir()
	s, err := peers.Open(peers.Config{Dir: dir, Self: self.did, AllowList: []string{a.did, b.did}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []peers.Proven{a.observe(t, digest("a"), t0), b.observe(t, digest("b"), t0)} {
		if err := s.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, self, a)
	if got := s.Agreement(serverID); got.Status != peers.SingleObserver || got.Counts.Observers != 1 {
		t.Fatalf("after b left the list and a restart: %+v", got)
	}
}

func TestSetAllowList(t *testing.T) {
	self, a, b := newObserver(t, 1), newObserver(t, 2), newObserver(t, 3)
	dir := t.TempDir()
	s, err := peers.Open(peers.Config{Dir: dir, Self: self.did, AllowList: []string{a.did, b.did}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(a.observe(t, digest("a"), t0)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutMirrored(mirror.Observation{Observer: b.did, Server: serverID, Endpoint: endpoint,
		Digest: digest("b"), ObservedAt: t0, LabelID: "urn:uuid:b", LeafIndex: 3}); err != nil {
		t.Fatal(err)
	}
	if n := s.Agreement(serverID).Counts.Observers; n != 2 {
		t.Fatalf("%d observers before, want 2", n)
	}
	if err := s.SetAllowList([]string{b.did}); err != nil {
		t.Fatal(err)
	}
	if n := s.Agreement(serverID).Counts.Observers; n != 1 {
		t.Fatalf("after a left: %d observers", n)
	}
	if err := s.Add(a.observe(t, digest("a2"), t0.Add(time.Hour))); !errors.Is(err, peers.ErrUnknownObserver) {
		t.Fatalf("an observer that left was taken: %v", err)
	}
	if err := s.SetAllowList(nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutMirrored(mirror.Observation{Observer: b.did, Server: serverID, Digest: digest("b"), LeafIndex: 4}); !errors.Is(err, peers.ErrUnknownObserver) {
		t.Fatalf("a mirrored observation of an observer that left: %v", err)
	}
	if n := s.Agreement(serverID).Counts.Observers; n != 0 {
		t.Fatalf("after both left: %d observers", n)
	}
	// The stored observation of a is gone too, not only hidden.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, self, a, b)
	if n := s.Agreement(serverID).Counts.Observers; n != 0 {
		t.Fatalf("after reopening, %d observations of departed observers came back", n)
	}
}
