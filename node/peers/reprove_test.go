package peers_test

import (
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/gossip/wire"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/peers"
)

// ownState is a crawl state in which self observed the test server with toolDigest.
func ownState(t *testing.T, self *observer, toolDigest string, at time.Time) *state.Store {
	t.Helper()
	st, err := state.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	_, id, leaf := self.label(t, serverName, toolDigest, at)
	tgt := state.Target{Target: registry.Target{ID: serverID, Name: serverName, Endpoint: endpoint,
		Transport: registry.TransportStreamable, RegistryStatus: registry.StatusActive}, Status: "ok", LastCrawled: at}
	obs := state.Observation{TargetID: serverID, Status: "ok", ObservedAt: at.Add(time.Hour), ToolSetDigest: toolDigest,
		Labels: map[string]string{awr.MethodObservation: id}}
	ref := state.LabelRef{TargetID: serverID, ID: id, Method: awr.MethodObservation, Verdict: "pass", ObservedAt: at, IssuedAt: at, LeafIndex: leaf}
	if err := st.Commit(state.Update{Target: &tgt, Observation: &obs, Labels: []state.LabelRef{ref}}); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestObserversReprove builds the peer view of three observers (this node's own from its crawl
// state, two peers' from gossip) and proves every observers[] entry again, as an offline
// client would, with log/format, log/awr and gossip/wire alone: the observer's did:key is all
// it trusts.
func TestObserversReprove(t *testing.T) {
	self, a, b := newObserver(t, 1), newObserver(t, 2), newObserver(t, 3)
	st := ownState(t, self, digest("a"), t0)
	own, err := peers.Own(st, self.log, self.origin, self.key)
	if err != nil || len(own) != 1 {
		t.Fatalf("Own = %d observations, %v; want 1", len(own), err)
	}
	s := openStore(t, "", self, a, b)
	for _, p := range []peers.Proven{own[0], a.observe(t, digest("a"), t0.Add(time.Minute)), b.observe(t, digest("b"), t0.Add(2*time.Minute))} {
		if err := s.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	observers, agreement, err := s.Members(serverID)
	if err != nil {
		t.Fatal(err)
	}
	if agreement["status"] != peers.Split {
		t.Errorf("agreement %v, want split", agreement)
	}
	// The members go into the signed /check answer as RFC 8785; read them back from there.
	doc, err := canon.Append(nil, map[string]any{"observers": observers})
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Observers []peers.Observer }
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Observers) != 3 {
		t.Fatalf("%d observers, want 3", len(got.Observers))
	}
	selfSeen := 0
	for _, o := range got.Observers {
		reprove(t, o)
		if o.Self {
			selfSeen++
			if o.DID != self.did {
				t.Errorf("self entry is %s", o.DID)
			}
		}
	}
	if selfSeen != 1 {
		t.Errorf("%d entries marked self, want 1", selfSeen)
	}
}

func reprove(t *testing.T, o peers.Observer) {
	t.Helper()
	pub, err := awr.ParseDIDKey(o.DID)
	if err != nil {
		t.Fatal(err)
	}
	head, err := canon.Canonicalize(o.Head)
	if err != nil {
		t.Fatal(err)
	}
	sth, err := format.VerifySTH(head, pub)
	if err != nil || sth.Log != o.DID || sth.TreeSize != o.HeadSize {
		t.Fatalf("%s: head: %v (log %s, size %d)", o.DID, err, sth.Log, sth.TreeSize)
	}
	label, err := canon.Canonicalize(o.Label)
	if err != nil {
		t.Fatal(err)
	}
	v, err := awr.VerifyLabel(label)
	if err != nil || v.Issuer != o.DID || v.ID != o.LabelID {
		t.Fatalf("%s: label: %v", o.DID, err)
	}
	var proof [][32]byte
	for _, h := range o.InclusionProof {
		var x [32]byte
		if n, err := hex.Decode(x[:], []byte(h)); err != nil || n != 32 {
			t.Fatalf("proof hash %q", h)
		}
		proof = append(proof, x)
	}
	if err := format.VerifyInclusion(o.LeafIndex, sth.TreeSize, format.LeafHash(label), proof, sth.Root); err != nil {
		t.Errorf("%s: inclusion: %v", o.DID, err)
	}
	w, err := wire.VerifyObservation([]byte(o.Observation), pub, "")
	if err != nil || w.Digest != o.Digest || w.LabelID != o.LabelID || w.LeafIndex != o.LeafIndex ||
		w.ObservedAt.Format(time.RFC3339) != o.ObservedAt {
		t.Errorf("%s: observation %+v, %v", o.DID, w, err)
	}
}

func TestOwnStatus(t *testing.T) {
	self := newObserver(t, 1)
	st := ownState(t, self, digest("a"), t0)
	obs, _ := st.Observation(serverID)
	obs.Status, obs.ObservedAt = "timeout", t0.Add(3*time.Hour)
	if err := st.Commit(state.Update{Observation: obs}); err != nil {
		t.Fatal(err)
	}
	own, err := peers.Own(st, self.log, self.origin, self.key)
	if err != nil || len(own) != 1 {
		t.Fatalf("Own = %d, %v", len(own), err)
	}
	w, err := wire.ParseObservationText(own[0].Observation)
	if err != nil || w.Status != "timeout" || w.Digest != "" || !w.ObservedAt.Equal(t0.Add(3*time.Hour)) {
		t.Fatalf("status observation %+v, %v", w, err)
	}
	s := openStore(t, "", self)
	if err := s.Add(own[0]); err != nil {
		t.Fatal(err)
	}
	if a := s.Agreement(serverID); a.Status != peers.Unobserved || a.Counts.Observers != 1 {
		t.Errorf("agreement %+v", a)
	}
}

// TestOwnOfReadsTheTargetsNamed: OwnOf gives the observations Own gives of the targets it
// names, byte for byte, leaves out an id the state does not hold, and gives none for no ids
// (never every target).
func TestOwnOfReadsTheTargetsNamed(t *testing.T) {
	self := newObserver(t, 1)
	st := ownState(t, self, digest("a"), t0)
	all, err := peers.Own(st, self.log, self.origin, self.key)
	if err != nil || len(all) != 1 {
		t.Fatalf("Own = %d observations, %v; want 1", len(all), err)
	}
	some, err := peers.OwnOf(st, self.log, []string{"no-such-target", serverID}, self.origin, self.key)
	if err != nil || len(some) != 1 || string(some[0].Observation) != string(all[0].Observation) {
		t.Fatalf("OwnOf = %d observations, %v; want Own's one", len(some), err)
	}
	for _, ids := range [][]string{nil, {}} {
		if none, err := peers.OwnOf(st, self.log, ids, self.origin, self.key); err != nil || len(none) != 0 {
			t.Errorf("OwnOf(%v) = %d observations, %v; want none", ids, len(none), err)
		}
	}
}
