package demo

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/node"
)

// identity is what peers must know of an observer before it starts: its did:key and its
// libp2p peer ID, both derived from its seed (made here on first run, where the node would
// make it, so the others' peer lists can name it).
type identity struct {
	did    string
	peerID string
}

func loadIdentity(dir string) (identity, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return identity{}, fmt.Errorf("making %s: %w", dir, err)
	}
	path := filepath.Join(dir, "seed")
	seed, err := keys.Load(path)
	if errors.Is(err, os.ErrNotExist) {
		seed, err = keys.Generate(path)
	}
	if err != nil {
		return identity{}, fmt.Errorf("loading the seed of %s: %w", dir, err)
	}
	return identity{
		did:    awr.DIDKey(seed.LogKey().Public().(ed25519.PublicKey)),
		peerID: format.PeerIDFromKey(seed.P2PKey().Public().(ed25519.PublicKey)),
	}, nil
}

// federation is one observer's federation settings: where its libp2p host listens, its
// peers (the other observers' signed descriptor files) and the observers whose data counts.
type federation struct {
	listen    []string
	allowList []string
}

func (o observer) tcpAddr() string {
	return fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", o.p2pPort)
}

func (o observer) quicAddr() string {
	return fmt.Sprintf("/ip4/127.0.0.1/udp/%d/quic-v1", o.p2pPort)
}

// descriptorPath is where the demo writes an observer's signed descriptor for the others
// (beside the one the node writes itself at start, so no two writers share a file).
func (o observer) descriptorPath() string { return filepath.Join(o.dir, "peer.descriptor") }

func federationOf(obs []observer, i int) federation {
	f := federation{listen: []string{obs[i].tcpAddr(), obs[i].quicAddr()}}
	for j, p := range obs {
		if j != i {
			f.allowList = append(f.allowList, p.ids.did)
		}
	}
	return f
}

// federate joins the observers into one federation: each listens for libp2p on its own
// port and has the other two as peers, by their signed descriptors, so heads, observations
// and cosignatures flow between them (a peer named by descriptor is also a witness this
// observer submits its checkpoints to). It is the one place the demo sets node.Config's
// federation fields.
func federate(obs []observer) error {
	for i := range obs {
		f := federationOf(obs, i)
		obs[i].cfg.P2PListen = f.listen
		obs[i].cfg.AllowList = f.allowList
		obs[i].cfg.GossipHeartbeat = gossipHeartbeat
		if err := writeDescriptor(obs[i]); err != nil {
			return err
		}
	}
	for i := range obs {
		for j, p := range obs {
			if j != i {
				obs[i].cfg.Peers = append(obs[i].cfg.Peers, p.descriptorPath())
			}
		}
	}
	return nil
}

// gossipHeartbeat is shorter than GossipSub's default second, so a head or an observation
// crosses the demo's three hops well within one crawl interval.
const gossipHeartbeat = 200 * time.Millisecond

// writeDescriptor signs o's descriptor as its node would at start (the node need not be
// open) and writes it where the other observers' Peers name it.
func writeDescriptor(o observer) error {
	n, err := node.New(o.cfg)
	if err != nil {
		return fmt.Errorf("observer %d: %w", o.n, err)
	}
	desc, err := n.Descriptor()
	if err != nil {
		return fmt.Errorf("observer %d: %w", o.n, err)
	}
	if err := os.WriteFile(o.descriptorPath(), desc, 0o644); err != nil {
		return fmt.Errorf("writing the descriptor of observer %d: %w", o.n, err)
	}
	return nil
}
