package demo

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
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
// peers ("did:key=<multiaddr>/p2p/<peer ID>") and the observers whose data counts.
type federation struct {
	listen    []string
	peers     []string
	allowList []string
}

func (o observer) tcpAddr() string {
	return fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", o.p2pPort)
}

func (o observer) quicAddr() string {
	return fmt.Sprintf("/ip4/127.0.0.1/udp/%d/quic-v1", o.p2pPort)
}

func federationOf(obs []observer, i int) federation {
	f := federation{listen: []string{obs[i].tcpAddr(), obs[i].quicAddr()}}
	for j, p := range obs {
		if j == i {
			continue
		}
		f.peers = append(f.peers, p.ids.did+"="+p.tcpAddr()+"/p2p/"+p.ids.peerID)
		f.allowList = append(f.allowList, p.ids.did)
	}
	return f
}

// federate joins the observers into one federation: each listens for libp2p on its own
// port and has the other two as peers, so heads, observations and cosignatures flow
// between them. It is the one place the demo sets node.Config's federation fields.
func federate(obs []observer) {
	for i := range obs {
		f := federationOf(obs, i)
		_ = f
		// When node.Config has its federation fields (P2PListen, Peers, AllowList), set:
		//	obs[i].cfg.P2PListen = f.listen
		//	obs[i].cfg.Peers = f.peers
		//	obs[i].cfg.AllowList = f.allowList
		// Until then the observers crawl the same fixture without gossip.
	}
}
