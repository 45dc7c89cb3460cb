package peers_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/histor-observer/histor/gossip/wire"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/node/peers"
)

// observer is a real log of one test observer: labels it issues go into its own Pebble log
// and are proven under its own signed heads.
type observer struct {
	key    ed25519.PrivateKey
	did    string
	origin string
	log    *hlog.Log
}

func newObserver(t *testing.T, n byte) *observer {
	t.Helper()
	key := ed25519.NewKeyFromSeed(sha256.New().Sum([]byte{n, 'o', 'b', 's'})[:32])
	o := &observer{key: key, did: awr.DIDKey(key.Public().(ed25519.PublicKey)), origin: fmt.Sprintf("observer%d.test/log", n)}
	l, err := hlog.Open(context.Background(), hlog.Config{Dir: t.TempDir(), Origin: o.origin, Key: key, DID: o.did})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	o.log = l
	return o
}

// digest is a well-formed tool-set digest named by a word.
func digest(word string) string {
	sum := sha256.Sum256([]byte(word))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

const (
	serverName = "io.example/weather"
	endpoint   = "https://weather.example/mcp"
)

var serverID = mtl.ServerID(serverName, endpoint)

// label issues and appends an observation label and returns it with its leaf index.
func (o *observer) label(t *testing.T, name, toolDigest string, at time.Time) ([]byte, string, uint64) {
	t.Helper()
	in := awr.LabelInput{ObservedAt: at, IssuedAt: at,
		Subject: awr.Ref{ID: "urn:awr:mtl:1:subject:sha256:" + fmt.Sprintf("%064x", at.Unix()), DigestSRI: digest("subject" + toolDigest)},
		ToolSet: awr.ToolSet{Count: 1, DigestSRI: toolDigest},
		Server:  awr.Server{Name: name, Registry: "urn:awr:mtl:1:registry:registry.example"}}
	signed, err := awr.IssueLabel(awr.MethodObservation, in, o.key)
	if err != nil {
		t.Fatal(err)
	}
	v, err := awr.Verify(signed)
	if err != nil {
		t.Fatal(err)
	}
	first, err := o.log.Append(context.Background(), []hlog.Entry{{ID: v.ID, Label: signed}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return signed, v.ID, first
}

// observe issues a label for what o saw and returns the proven observation digest.
func (o *observer) observe(t *testing.T, toolDigest string, at time.Time) peers.Proven {
	t.Helper()
	label, id, leaf := o.label(t, serverName, toolDigest, at)
	return o.prove(t, wire.Observation{Observer: o.did, Server: serverID, Endpoint: endpoint,
		Digest: toolDigest, ObservedAt: at, LabelID: id, LeafIndex: leaf}, label)
}

// prove signs obs (its size the log's latest) and proves its label under the latest head.
func (o *observer) prove(t *testing.T, obs wire.Observation, label []byte) peers.Proven {
	t.Helper()
	head := o.log.Latest()
	obs.TreeSize = head.Size
	msg, err := wire.SignObservation(o.origin, o.key, obs)
	if err != nil {
		t.Fatal(err)
	}
	proof, err := o.log.InclusionProof(obs.LeafIndex, head.Size)
	if err != nil {
		t.Fatal(err)
	}
	return peers.Proven{Observation: msg, Label: label, Proof: proof, Head: head.STH}
}

func openStore(t *testing.T, dir string, self *observer, others ...*observer) *peers.Store {
	t.Helper()
	cfg := peers.Config{Dir: dir, Self: self.did}
	for _, o := range others {
		cfg.AllowList = append(cfg.AllowList, o.did)
	}
	s, err := peers.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// seenProven is the proven observation a table row describes; a status row cites a label
// the observer issued a minute before.
func seenProven(t *testing.T, o *observer, x seen) peers.Proven {
	t.Helper()
	at := t0.Add(x.at)
	if x.word[0] != '!' {
		return o.observe(t, digest(x.word), at)
	}
	label, id, leaf := o.label(t, serverName, digest("earlier"), at.Add(-time.Minute))
	return o.prove(t, wire.Observation{Observer: o.did, Server: serverID, Endpoint: endpoint,
		Status: x.word[1:], ObservedAt: at, LabelID: id, LeafIndex: leaf}, label)
}
