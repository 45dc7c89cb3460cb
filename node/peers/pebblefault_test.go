package peers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/histor-observer/histor/gossip/wire"
	"github.com/histor-observer/histor/internal/faultfs/faulttest"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/node/mirror"
	"github.com/histor-observer/histor/node/peers"
)

// TestPebbleFaults records observations from a few peers on the peer view's real Pebble over
// a disk that fails: each write, sync, create, rename, remove and close after Open in turn,
// once and from then on, and a disk that fills (faulttest.Run). After each: the observation
// or allow-list change that met the fault fails with it, the store stops (Stopped) and
// refuses later writes at once, and after a crash it reopens with every acknowledged
// observation, its label, proof and head byte for byte, an agreement that follows from them,
// no observation a later acknowledged write dropped, and takes observations again.
func TestPebbleFaults(t *testing.T) {
	self, a, b, c := newObserver(t, 1), newObserver(t, 2), newObserver(t, 3), newObserver(t, 4)
	const otherName, otherEndpoint = "io.example/other", "https://other.example/mcp"
	otherID := mtl.ServerID(otherName, otherEndpoint)
	aFirst := a.observe(t, digest("x"), t0)
	// aLater is a's later observation, proven at once and again under a larger head.
	aLabel, aID, aLeaf := a.label(t, serverName, digest("y"), t0.Add(time.Hour))
	aObs := wire.Observation{Observer: a.did, Server: serverID, Endpoint: endpoint, Digest: digest("y"),
		ObservedAt: t0.Add(time.Hour), LabelID: aID, LeafIndex: aLeaf}
	aLater := a.prove(t, aObs, aLabel)
	bLabel, bID, bLeaf := b.label(t, otherName, digest("z"), t0)
	bOther := b.prove(t, wire.Observation{Observer: b.did, Server: otherID, Endpoint: otherEndpoint, Digest: digest("z"),
		ObservedAt: t0, LabelID: bID, LeafIndex: bLeaf}, bLabel)
	a.label(t, serverName, digest("unrelated"), t0.Add(2*time.Hour))
	aRefreshed := a.prove(t, aObs, aLabel)
	aAgain := a.observe(t, digest("w"), t0.Add(3*time.Hour))

	// add records p and checks the agreement it leaves on server.
	add := func(name string, p peers.Proven, server, want string) faulttest.Step[*peers.Store] {
		return faulttest.Step[*peers.Store]{Name: name, Writes: true, Do: func(s *peers.Store) error {
			if err := s.Add(p); err != nil {
				return err
			}
			if got := s.Agreement(server).Status; got != want {
				return fmt.Errorf("%s: agreement %s, want %s", name, got, want)
			}
			return nil
		}}
	}
	steps := []faulttest.Step[*peers.Store]{
		add("a sees x", aFirst, serverID, peers.SingleObserver),
		add("b sees x", b.observe(t, digest("x"), t0), serverID, peers.Unanimous),
		add("self sees x", self.observe(t, digest("x"), t0), serverID, peers.Unanimous),
		add("c sees y", c.observe(t, digest("y"), t0), serverID, peers.Split),
		{Name: "a's x again", Do: func(s *peers.Store) error { return s.Add(aFirst) }}, // kept already: nothing written
		add("a sees y", aLater, serverID, peers.Split),
		{Name: "a's x again, now stale", Do: func(s *peers.Store) error {
			// Refused as stale whether the store stopped or not; the same as kept when a's y was not
			// taken, and written again when a's x was not either (then refused by a stopped store).
			if err := s.Add(aFirst); !errors.Is(err, peers.ErrStale) {
				return err
			}
			return nil
		}},
		add("b sees z elsewhere", bOther, otherID, peers.SingleObserver),
		add("a's y under a larger head", aRefreshed, serverID, peers.Split),
		// The mirror holds it: the store writes only to drop c's own stored observation, so
		// after a fault that came before that one it succeeds on a stopped store.
		{Name: "c's mirrored x", Do: func(s *peers.Store) error {
			return s.PutMirrored(mirror.Observation{Observer: c.did, Server: serverID, Endpoint: endpoint, Digest: digest("x"),
				ObservedAt: t0.Add(time.Hour), LabelID: "urn:uuid:c-mirrored", LeafIndex: 40})
		}},
		{Name: "b leaves", Writes: true, Do: func(s *peers.Store) error { return s.SetAllowList([]string{a.did, c.did}) }},
	}
	// fills are the flush case's observations: a's, each of a server of its own.
	fills := &fillObservations{o: a}
	faulttest.Run(t, faulttest.Scenario[*peers.Store]{
		Dir: "peers",
		Open: func(fsys vfs.FS) (*peers.Store, error) {
			return peers.Open(peers.Config{Dir: "peers", FS: fsys, Self: self.did, AllowList: []string{a.did, b.did, c.did},
				Now: func() time.Time { return t0 }, Prove: func(string, uint64) (mirror.Proof, error) {
					return mirror.Proof{Entry: []byte(`{}`), Size: 41, Checkpoint: []byte("mirrored\n")}, nil
				}})
		},
		Steps: steps,
		Dump:  func(s *peers.Store) (string, error) { return dumpPeers(s, serverID, otherID) },
		// A stopped store's reads show what it acknowledged but for the last step: the allow-list
		// counts at once, even when deleting the records of the observer that left fails.
		StoppedShowsAcked: false,
		Again:             func(s *peers.Store) error { return s.Add(aAgain) },
		Fill:              func(s *peers.Store, i int) error { return s.Add(fills.get(t, i).proven) },
		Filled: func(s *peers.Store, i int) (bool, error) {
			f := fills.get(t, i)
			obs, err := s.Observers(f.server)
			return err == nil && len(obs) == 1 && obs[0].DID == a.did && obs[0].Digest == f.digest, err
		},
	})
}

// fillObservations are an observer's observations of servers fill-0, fill-1, …, their labels
// appended to its log in batches of fillBatch as they are asked for.
type fillObservations struct {
	o    *observer
	made []fillObservation
}

type fillObservation struct {
	server, digest string
	proven         peers.Proven
}

const fillBatch = 256

func (f *fillObservations) get(t *testing.T, i int) fillObservation {
	t.Helper()
	for len(f.made) <= i {
		from := len(f.made)
		var entries []hlog.Entry
		var labels [][]byte
		var obs []wire.Observation
		for k := from; k < from+fillBatch; k++ {
			name, ep, d := fmt.Sprintf("io.example/fill-%d", k), fmt.Sprintf("https://fill-%d.example/mcp", k), digest(fmt.Sprint("fill", k))
			at := t0.Add(time.Duration(k) * time.Second)
			in := awr.LabelInput{ObservedAt: at, IssuedAt: at,
				Subject: awr.Ref{ID: "urn:awr:mtl:1:subject:sha256:" + fmt.Sprintf("%064x", k), DigestSRI: digest("subject" + d)},
				ToolSet: awr.ToolSet{Count: 1, DigestSRI: d},
				Server:  awr.Server{Name: name, Registry: "urn:awr:mtl:1:registry:registry.example"}}
			signed, err := awr.IssueLabel(awr.MethodObservation, in, f.o.key)
			if err != nil {
				t.Fatal(err)
			}
			v, err := awr.Verify(signed)
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, hlog.Entry{ID: v.ID, Label: signed})
			labels = append(labels, signed)
			obs = append(obs, wire.Observation{Observer: f.o.did, Server: mtl.ServerID(name, ep), Endpoint: ep, Digest: d, ObservedAt: at, LabelID: v.ID})
		}
		first, err := f.o.log.Append(context.Background(), entries, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k := range obs {
			obs[k].LeafIndex = first + uint64(k)
			f.made = append(f.made, fillObservation{server: obs[k].Server, digest: obs[k].Digest, proven: f.o.prove(t, obs[k], labels[k])})
		}
	}
	return f.made[i]
}

// dumpPeers is what the peer view holds on disk of servers, a line an observation (its
// label, proof and head included, each checked against the others) and one for each
// server's agreement over them. Mirrored observations are left out: the store keeps them in
// memory only.
func dumpPeers(s *peers.Store, servers ...string) (string, error) {
	var b strings.Builder
	for _, server := range servers {
		obs, err := s.Observers(server)
		if err != nil {
			return "", err
		}
		for _, o := range obs {
			if o.Checkpoint != "" {
				continue
			}
			if err := whole(o); err != nil {
				return "", fmt.Errorf("the observation of %s by %s: %w", server, o.DID, err)
			}
			j, err := json.Marshal(o)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "%s %s\n", server, j)
		}
		j, err := json.Marshal(s.StoredAgreement(server))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s agreement %s\n", server, j)
	}
	return b.String(), nil
}

// whole checks that an observer entry is one observation: what it says is what its signed
// observation says, under the head it carries.
func whole(o peers.Observer) error {
	n, err := wire.ParseObservationText([]byte(o.Observation))
	if err != nil {
		return err
	}
	sth, err := format.ParseSTH(o.Head)
	if err != nil {
		return err
	}
	if n.Observer != o.DID || n.LabelID != o.LabelID || n.Digest != o.Digest || n.Status != o.Status ||
		n.LeafIndex != o.LeafIndex || sth.TreeSize != o.HeadSize {
		return fmt.Errorf("the entry says label %s, digest %q, status %q, leaf %d, head %d; its signed observation label %s, digest %q, status %q, leaf %d, its head %d",
			o.LabelID, o.Digest, o.Status, o.LeafIndex, o.HeadSize, n.LabelID, n.Digest, n.Status, n.LeafIndex, sth.TreeSize)
	}
	return nil
}
