package gossip

import (
	"crypto/ed25519"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
)

// member is one allow-listed observer as this node knows it.
type member struct {
	did    string
	pub    ed25519.PublicKey
	origin string // "" until a descriptor names it
	// witness is its cosigner, nil until a descriptor names it.
	witness    *format.Cosigner
	peer       peer.ID // "" when it is not a configured peer
	addrs      []ma.Multiaddr
	descTime   uint64 // Time of the descriptor held; a newer one replaces it
	descriptor []byte
}

// members is the allow-list with what is known of each observer. It is read on every
// message and every connection and written when a descriptor arrives; guarded by mu.
type members struct {
	mu     sync.RWMutex
	self   string
	byDID  map[string]*member
	byPeer map[peer.ID]*member
}

func newMembers(self *format.Observer, allow []string, peers []Peer) (*members, error) {
	m := &members{self: self.DID, byDID: map[string]*member{}, byPeer: map[peer.ID]*member{}}
	for _, did := range append([]string{self.DID}, allow...) {
		pub, err := awr.ParseDIDKey(did)
		if err != nil {
			return nil, fmt.Errorf("allow-list entry %q: %w", did, err)
		}
		m.byDID[did] = &member{did: did, pub: pub}
	}
	if err := m.learn(self, nil); err != nil {
		return nil, err
	}
	for i, p := range peers {
		if err := m.addPeer(p); err != nil {
			return nil, fmt.Errorf("peer %d: %w", i+1, err)
		}
	}
	return m, nil
}

func (m *members) addPeer(p Peer) error {
	if p.Descriptor != nil {
		o, err := format.ParseObserver(p.Descriptor)
		if err != nil {
			return err
		}
		if m.byDID[o.DID] == nil {
			return fmt.Errorf("observer %s is not on the allow-list", o.DID)
		}
		return m.learn(o, p.Descriptor)
	}
	ai, err := peer.AddrInfoFromString(p.Addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", p.Addr, err)
	}
	mb := m.byDID[p.DID]
	if mb == nil {
		return fmt.Errorf("observer %s is not on the allow-list", p.DID)
	}
	if err := checkPeerKey(ai.ID, mb.pub); err != nil {
		return err
	}
	return m.bind(mb, ai.ID, ai.Addrs)
}

// checkPeerKey refuses a peer ID that is the observer's log key: the host key must be its own.
func checkPeerKey(id peer.ID, logKey ed25519.PublicKey) error {
	if id.String() == format.PeerIDFromKey(logKey) {
		return fmt.Errorf("peer %s uses the log key as its host key", id)
	}
	return nil
}

func (m *members) bind(mb *member, id peer.ID, addrs []ma.Multiaddr) error {
	if other := m.byPeer[id]; other != nil && other != mb {
		return fmt.Errorf("peer %s is claimed by %s and %s", id, other.did, mb.did)
	}
	if mb.peer != "" && mb.peer != id {
		delete(m.byPeer, mb.peer)
	}
	mb.peer, mb.addrs = id, addrs
	m.byPeer[id] = mb
	return nil
}

// learn records a verified descriptor of an allow-listed observer unless an equal or newer
// one is held.
func (m *members) learn(o *format.Observer, raw []byte) error {
	mb := m.byDID[o.DID]
	if mb == nil {
		return fmt.Errorf("observer %s is not on the allow-list", o.DID)
	}
	if mb.descriptor != nil && o.Time <= mb.descTime {
		return nil
	}
	id, err := peer.Decode(o.PeerID())
	if err != nil {
		return fmt.Errorf("peer ID of %s: %w", o.DID, err)
	}
	var addrs []ma.Multiaddr
	for _, a := range o.Addrs {
		addr, err := ma.NewMultiaddr(a)
		if err != nil {
			return fmt.Errorf("address %q of %s: %w", a, o.DID, err)
		}
		addrs = append(addrs, addr)
	}
	w := o.Witness
	mb.origin, mb.witness, mb.descTime, mb.descriptor = o.Origin, &w, o.Time, raw
	if o.DID == m.self {
		return nil
	}
	return m.bind(mb, id, addrs)
}

// learnDescriptor verifies a descriptor fetched from peer id and records it.
func (m *members) learnDescriptor(id peer.ID, raw []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	mb := m.byPeer[id]
	if mb == nil {
		return fmt.Errorf("peer %s is no federation peer", id)
	}
	o, err := format.VerifyObserver(raw, mb.did)
	if err != nil {
		return err
	}
	if o.PeerID() != id.String() {
		return fmt.Errorf("descriptor of %s names peer %s, not %s", mb.did, o.PeerID(), id)
	}
	return m.learn(o, raw)
}

// replace takes fresh's members in place of m's, keeping what was learned of each member
// that stays a peer under the same peer ID (a descriptor fetched from it that is newer than
// the one fresh was given). It returns the peers that left and the ones that joined.
func (m *members) replace(fresh *members) (left, joined []peer.AddrInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for did, nb := range fresh.byDID {
		ob := m.byDID[did]
		if ob == nil || ob.descriptor == nil || did == m.self || nb.peer == "" || ob.peer != nb.peer {
			continue
		}
		if nb.descriptor == nil || ob.descTime > nb.descTime {
			nb.origin, nb.witness, nb.descTime, nb.descriptor = ob.origin, ob.witness, ob.descTime, ob.descriptor
			if nb.addrs == nil {
				nb.addrs = ob.addrs
			}
		}
	}
	for id, ob := range m.byPeer {
		if nb := fresh.byPeer[id]; nb == nil || nb.did != ob.did {
			left = append(left, peer.AddrInfo{ID: id, Addrs: ob.addrs})
		}
	}
	for id, nb := range fresh.byPeer {
		if ob := m.byPeer[id]; ob == nil || ob.did != nb.did {
			joined = append(joined, peer.AddrInfo{ID: id, Addrs: nb.addrs})
		}
	}
	m.byDID, m.byPeer = fresh.byDID, fresh.byPeer
	return left, joined
}

// dids lists the allow-listed observers, this one included.
func (m *members) dids() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.byDID))
	for did := range m.byDID {
		out = append(out, did)
	}
	return out
}

// view is a copy of one member, safe to read without the lock.
type view struct {
	did, origin string
	pub         ed25519.PublicKey
	witnesses   []format.Cosigner
	self        bool
}

func (m *members) lookup(did string) (view, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mb := m.byDID[did]
	if mb == nil {
		return view{}, false
	}
	v := view{did: did, origin: mb.origin, pub: mb.pub, self: did == m.self}
	// Any allow-listed observer's witness may have cosigned any head.
	for _, o := range m.byDID {
		if o.witness != nil {
			v.witnesses = append(v.witnesses, *o.witness)
		}
	}
	return v, true
}

// peerDID returns the did:key of a federation peer, "" for any other peer.
func (m *members) peerDID(id peer.ID) string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if mb := m.byPeer[id]; mb != nil {
		return mb.did
	}
	return ""
}

func (m *members) hasDescriptor(id peer.ID) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mb := m.byPeer[id]
	return mb != nil && mb.descriptor != nil
}

// peers lists the federation peers to keep connected.
func (m *members) peers() []peer.AddrInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []peer.AddrInfo
	for id, mb := range m.byPeer {
		out = append(out, peer.AddrInfo{ID: id, Addrs: mb.addrs})
	}
	return out
}
