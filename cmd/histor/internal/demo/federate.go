package demo

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/histor-observer/histor/node"
)

func (o observer) tcpAddr() string {
	return fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", o.p2pPort)
}

func (o observer) quicAddr() string {
	return fmt.Sprintf("/ip4/127.0.0.1/udp/%d/quic-v1", o.p2pPort)
}

// descriptorPath is where the demo writes an observer's signed descriptor for the others
// (beside the one the node writes itself at start, so no two writers share a file).
func (o observer) descriptorPath() string { return filepath.Join(o.dir, "peer.descriptor") }

// federate joins the observers into one federation: each listens for libp2p on its own
// port and has the other two as peers, by their signed descriptors, so heads, observations
// and cosignatures flow between them (a peer named by descriptor is also a witness this
// observer submits its checkpoints to). It is the one place the demo sets node.Config's
// federation fields.
func federate(obs []observer) error {
	for i := range obs {
		obs[i].cfg.P2PListen = []string{obs[i].tcpAddr(), obs[i].quicAddr()}
		obs[i].cfg.GossipHeartbeat = gossipHeartbeat
		if err := writeDescriptor(&obs[i]); err != nil {
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
// open; New makes its seed on the first run) and writes it where the other observers'
// Peers name it; it keeps o's did:key for the guide.
func writeDescriptor(o *observer) error {
	n, err := node.New(o.cfg)
	if err == nil {
		_, err = n.WriteDescriptor(o.descriptorPath())
	}
	if err != nil {
		return fmt.Errorf("observer %d: %w", o.n, err)
	}
	o.did = n.DID()
	return nil
}
