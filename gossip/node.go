package gossip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/histor-observer/histor/gossip/wire"
	"github.com/histor-observer/histor/log/format"
)

// protectTag shields federation peers from the connection manager's trimming.
const protectTag = "histor-federation"

// Node is one observer's federation host. Its methods are safe for concurrent use.
type Node struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	self    *format.Observer
	members *members
	heads   *heads
	host    host.Host
	ownHost bool // the host was built by New and is closed by Close

	ctx    context.Context // ended by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	ps     *pubsub.PubSub
	topics map[string]*pubsub.Topic
	// loops holds the loop that keeps each federation peer connected; guarded by loopsMu.
	loopsMu sync.Mutex
	loops   map[peer.ID]*peerLoop
	clocks  clocks

	scoresMu sync.Mutex
	scores   map[peer.ID]float64 // last peer scores reported by GossipSub; guarded by scoresMu
	once     sync.Once
}

// New checks cfg and builds the host; nothing is dialled or published before Start.
func New(cfg Config) (*Node, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("configuring gossip: %w", err)
	}
	self, err := format.ParseObserver(c.Descriptor)
	if err != nil {
		return nil, fmt.Errorf("configuring gossip: own descriptor: %w", err)
	}
	if !self.P2PKey.Equal(c.Identity.Public()) {
		return nil, errors.New("configuring gossip: own descriptor names another host key")
	}
	m, err := newMembers(self, c.AllowList, c.Peers)
	if err != nil {
		return nil, fmt.Errorf("configuring gossip: %w", err)
	}
	met, err := newMetrics(c.Registerer)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: c, log: c.Logger, metrics: met, self: self, members: m, heads: newHeads(),
		topics: map[string]*pubsub.Topic{}, loops: map[peer.ID]*peerLoop{}, clocks: clocks{last: map[string]Clock{}}, scores: map[peer.ID]float64{}}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if n.host = c.Host; n.host == nil {
		if n.host, err = n.buildHost(); err != nil {
			met.unregister()
			return nil, fmt.Errorf("building libp2p host: %w", err)
		}
		n.ownHost = true
	}
	return n, nil
}

func (n *Node) buildHost() (host.Host, error) {
	priv, err := crypto.UnmarshalEd25519PrivateKey(n.cfg.Identity)
	if err != nil {
		return nil, err
	}
	opts := []libp2p.Option{
		libp2p.Identity(priv),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Transport(quic.NewTransport),
		libp2p.DisableRelay(),
		libp2p.ConnectionGater(gater{n.members}),
		libp2p.UserAgent("histor"),
	}
	if len(n.cfg.Listen) == 0 {
		opts = append(opts, libp2p.NoListenAddrs)
	} else {
		opts = append(opts, libp2p.ListenAddrStrings(n.cfg.Listen...))
	}
	if n.cfg.Registerer != nil {
		opts = append(opts, libp2p.PrometheusRegisterer(n.cfg.Registerer))
	} else {
		opts = append(opts, libp2p.DisableMetrics())
	}
	return libp2p.New(opts...)
}

// Host is the libp2p host, for its addresses and peer ID.
func (n *Node) Host() host.Host { return n.host }

// Start joins the topics, starts the protocols and the loops that keep federation peers
// connected and republish the latest head. In this order, because pubsub learns a peer's
// protocols when it connects.
func (n *Node) Start(ctx context.Context) error {
	if err := n.startPubSub(); err != nil {
		return fmt.Errorf("starting gossip: %w", err)
	}
	n.setHandlers()
	n.host.Network().Notify(&network.NotifyBundle{ConnectedF: n.connected, DisconnectedF: n.disconnected})
	for _, ai := range n.members.peers() {
		n.startPeer(ai)
	}
	n.goLoop(n.republishLoop)
	return nil
}

func (n *Node) goLoop(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// Close stops every loop and, if New built it, the host.
func (n *Node) Close() error {
	var err error
	n.once.Do(func() {
		n.cancel()
		for _, t := range n.topics {
			t.Close()
		}
		if n.ownHost {
			err = n.host.Close()
		}
		n.wg.Wait()
		n.metrics.unregister()
	})
	return err
}

// peerLoop is the loop keeping one federation peer connected: wake is signalled when the
// peer disconnects, cancel ends the loop when the peer leaves the federation.
type peerLoop struct {
	wake   chan struct{}
	cancel context.CancelFunc
}

// startPeer protects a federation peer from trimming and starts the loop that keeps it
// connected, pulling its head at once if it is connected already (no event will come).
func (n *Node) startPeer(ai peer.AddrInfo) {
	n.host.Peerstore().AddAddrs(ai.ID, ai.Addrs, peerstore.PermanentAddrTTL)
	n.host.ConnManager().Protect(ai.ID, protectTag)
	ctx, cancel := context.WithCancel(n.ctx)
	l := &peerLoop{wake: make(chan struct{}, 1), cancel: cancel}
	n.loopsMu.Lock()
	if old := n.loops[ai.ID]; old != nil {
		old.cancel()
	}
	n.loops[ai.ID] = l
	n.loopsMu.Unlock()
	if n.host.Network().Connectedness(ai.ID) == network.Connected {
		n.goLoop(func() { n.pull(ai.ID) })
	}
	n.goLoop(func() { n.keepConnected(ctx, ai.ID, l.wake) })
}

// stopPeer ends the loop of a peer that left the federation and closes its connections;
// the gater refuses it from now on.
func (n *Node) stopPeer(id peer.ID) {
	n.loopsMu.Lock()
	if l := n.loops[id]; l != nil {
		l.cancel()
		delete(n.loops, id)
	}
	n.loopsMu.Unlock()
	n.host.ConnManager().Unprotect(id, protectTag)
	n.host.Peerstore().ClearAddrs(id)
	if err := n.host.Network().ClosePeer(id); err != nil {
		n.log.Debug("closing a former peer's connections", "peer", id, "err", err)
	}
}

// SetMembers replaces the allow-list and the federation peers while the host runs, as New
// takes them: peers that joined are dialled and kept connected, peers that left are
// disconnected and refused from then on, and a descriptor learned from a peer that stays is
// kept. Heads and observations already accepted stay. On an error nothing changes.
func (n *Node) SetMembers(allow []string, peers []Peer) error {
	fresh, err := newMembers(n.self, allow, peers)
	if err != nil {
		return fmt.Errorf("setting gossip members: %w", err)
	}
	left, joined := n.members.replace(fresh)
	for _, ai := range left {
		n.stopPeer(ai.ID)
	}
	if n.ctx.Err() != nil {
		return nil
	}
	for _, ai := range n.members.peers() {
		n.host.Peerstore().AddAddrs(ai.ID, ai.Addrs, peerstore.PermanentAddrTTL)
	}
	for _, ai := range joined {
		n.startPeer(ai)
	}
	n.log.Info("gossip members set", "observers", len(fresh.byDID), "left", len(left), "joined", len(joined))
	return nil
}

// keepConnected dials a federation peer whenever it is not connected, backing off
// exponentially with jitter between failures, until ctx ends; libp2p never reconnects by
// itself.
func (n *Node) keepConnected(ctx context.Context, id peer.ID, wake <-chan struct{}) {
	backoff := n.cfg.ReconnectMin
	for {
		if n.host.Network().Connectedness(id) != network.Connected {
			ctx, cancel := context.WithTimeout(ctx, n.cfg.RequestTimeout)
			err := n.host.Connect(ctx, peer.AddrInfo{ID: id})
			cancel()
			if err == nil && n.host.Network().Connectedness(id) == network.Connected {
				backoff = n.cfg.ReconnectMin
				continue
			}
			n.log.Debug("dialling federation peer", "peer", id, "err", err, "retry in", backoff)
		} else {
			backoff = n.cfg.ReconnectMin
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-time.After(wait):
		}
		backoff = min(2*backoff, n.cfg.ReconnectMax)
	}
}

func (n *Node) connected(_ network.Network, c network.Conn) {
	id := c.RemotePeer()
	if n.members.peerDID(id) == "" || n.ctx.Err() != nil {
		return
	}
	// Pull the peer's head on every new connection: what it published while we were apart
	// will never be gossiped again.
	n.goLoop(func() { n.pull(id) })
}

func (n *Node) disconnected(_ network.Network, c network.Conn) {
	n.loopsMu.Lock()
	l := n.loops[c.RemotePeer()]
	n.loopsMu.Unlock()
	if l != nil {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// pull fetches a connected peer's latest head, retrying with backoff while the peer stays
// connected: a peer that is still starting does not serve the protocol yet.
func (n *Node) pull(id peer.ID) {
	backoff := n.cfg.ReconnectMin
	for {
		err := n.pullOnce(id)
		var se *StatusError
		if err == nil || errors.As(err, &se) && se.Status == 404 {
			return
		}
		n.metrics.pull("failed")
		n.log.Debug("pulling latest head", "peer", id, "err", err, "retry in", backoff)
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(backoff):
		}
		if n.host.Network().Connectedness(id) != network.Connected {
			return // the next connection pulls again
		}
		backoff = min(2*backoff, n.cfg.ReconnectMax)
	}
}

// pullOnce learns a peer's descriptor if it is not held yet, then checks its latest head as
// the head topic's validator would.
func (n *Node) pullOnce(id peer.ID) error {
	if !n.members.hasDescriptor(id) {
		raw, err := n.request(n.ctx, id, ProtoDescriptor, nil, format.MaxObserverBytes)
		if err != nil {
			return err
		}
		if err := n.members.learnDescriptor(id, raw); err != nil {
			n.log.Warn("peer served a descriptor we refuse", "peer", id, "err", err)
		}
	}
	body, err := n.request(n.ctx, id, ProtoHead, nil, wire.MaxHeadBytes)
	if err != nil {
		return err
	}
	res, hd := n.checkHead(body)
	n.metrics.message("pull", res.v)
	n.metrics.pull(map[bool]string{true: "news", false: "no news"}[hd != nil])
	if res.v == pubsub.ValidationReject {
		n.log.Warn("peer served a head we refuse", "peer", id, "why", res.why)
	}
	if hd != nil {
		n.report(func() { n.cfg.OnHead(hd) }, n.cfg.OnHead != nil)
	}
	if err := n.measureClock(n.ctx, id); err != nil {
		n.log.Debug("measuring a peer's clock", "peer", id, "err", err)
	}
	return nil
}

// report runs a callback if it is set.
func (n *Node) report(f func(), set bool) {
	if set {
		f()
	}
}

// Heads returns the newest verified head of each observer, by did:key.
func (n *Node) Heads() map[string]*Head { return n.heads.all() }

// PeerScores returns the GossipSub scores of connected peers as last computed.
func (n *Node) PeerScores() map[peer.ID]float64 {
	n.scoresMu.Lock()
	defer n.scoresMu.Unlock()
	out := make(map[peer.ID]float64, len(n.scores))
	for k, v := range n.scores {
		out[k] = v
	}
	return out
}

// Addrs returns the host's listen addresses with its /p2p/ part, as peers configure them.
func (n *Node) Addrs() []string {
	var out []string
	for _, a := range n.host.Addrs() {
		out = append(out, a.Encapsulate(ma.StringCast("/p2p/"+n.host.ID().String())).String())
	}
	return out
}
