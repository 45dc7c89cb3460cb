package gossip

import (
	"errors"

	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// gater admits connections with federation peers only. The decision is in InterceptSecured,
// the first point at which the remote peer ID is proven by the handshake; dials to other peers
// are refused early too.
type gater struct{ m *members }

func (g gater) InterceptPeerDial(p peer.ID) bool                 { return g.m.peerDID(p) != "" }
func (g gater) InterceptAddrDial(p peer.ID, _ ma.Multiaddr) bool { return g.m.peerDID(p) != "" }
func (g gater) InterceptAccept(network.ConnMultiaddrs) bool      { return true }
func (g gater) InterceptSecured(_ network.Direction, p peer.ID, _ network.ConnMultiaddrs) bool {
	return g.m.peerDID(p) != ""
}
func (g gater) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }

// blacklist makes pubsub drop every RPC of a peer that is not a federation peer, also where
// no gater runs (a host passed in). The empty ID is what an authorless message names as its
// author, and is never blacklisted.
type blacklist struct {
	m    *members
	self peer.ID
}

func (b blacklist) Add(peer.ID) bool { return false }
func (b blacklist) Contains(p peer.ID) bool {
	return p != "" && p != b.self && b.m.peerDID(p) == ""
}

func checkListen(a string) error {
	addr, err := ma.NewMultiaddr(a)
	if err != nil {
		return err
	}
	ps := addr.Protocols()
	if len(ps) < 2 || (ps[0].Code != ma.P_IP4 && ps[0].Code != ma.P_IP6) {
		return errors.New("not an IP address")
	}
	switch {
	case len(ps) == 2 && ps[1].Code == ma.P_TCP:
	case len(ps) == 3 && ps[1].Code == ma.P_UDP && ps[2].Code == ma.P_QUIC_V1:
	default:
		return errors.New("transport is neither TCP nor QUIC-v1")
	}
	return nil
}
