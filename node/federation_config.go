package node

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/gossip"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/witness/submit"
)

// Bounds of the federation settings: each list is read at start-up and
// held in memory, and each peer is a connection kept open.
const (
	MaxPeers       = 256
	MaxAllowList   = 4096
	MaxWitnessLogs = 1024
	MaxWitnesses   = 64
	// maxPolicyBytes bounds a tlog-policy file.
	maxPolicyBytes = 64 << 10
	// MaxMembersFileBytes bounds a members file (MembersFile).
	MaxMembersFileBytes = 1 << 20
)

// fedSettings is Config's federation fields, parsed and checked.
type fedSettings struct {
	peers     []fedPeer
	allow     []string                 // AllowList and every peer's did:key, without repeats
	logs      map[string]note.Verifier // WitnessLogs and descriptor peers' logs, by origin
	witnesses []submit.Witness         // Witnesses
	policy    *format.Policy           // WitnessPolicy's, nil when none was given
}

// fedPeer is one entry of Config.Peers.
type fedPeer struct {
	did  string
	pub  ed25519.PublicKey // the peer's log key, from its did:key
	desc *format.Observer  // nil for a did:key=multiaddr peer
	gp   gossip.Peer
}

// checkFederation parses the federation fields into c.fed.
func (c *Config) checkFederation() error {
	if (len(c.Peers) > 0 || c.MembersFile != "") && len(c.P2PListen) == 0 {
		return errors.New("config: Peers and a MembersFile need a P2PListen address (the gossip host)")
	}
	if c.GossipHeartbeat < 0 {
		return errors.New("config: GossipHeartbeat must not be negative")
	}
	if c.MirrorPoll < 0 || c.MirrorMaxBundleBytes < 0 {
		return errors.New("config: MirrorPoll and MirrorMaxBundleBytes must not be negative")
	}
	for name, n := range map[string][2]int{"WitnessLogs": {len(c.WitnessLogs), MaxWitnessLogs}, "Witnesses": {len(c.Witnesses), MaxWitnesses}} {
		if n[0] > n[1] {
			return fmt.Errorf("config: %s has %d entries, at most %d", name, n[0], n[1])
		}
	}
	for _, a := range c.P2PListen {
		if err := format.CheckMultiaddr(a); err != nil {
			return fmt.Errorf("config: P2PListen %q: %w", a, err)
		}
	}
	fed, err := parseFederation(c)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	c.fed = fed
	return nil
}

// parseFederation reads the federation settings: Config's fields, the members file and
// every descriptor file they name. A reload of the members file runs it again.
func parseFederation(c *Config) (*fedSettings, error) {
	fed := &fedSettings{logs: map[string]note.Verifier{}}
	specs, allow := c.Peers, c.AllowList
	if c.MembersFile != "" {
		mf, err := readMembersFile(c.MembersFile)
		if err != nil {
			return nil, fmt.Errorf("MembersFile: %w", err)
		}
		specs, allow = append(slices.Clip(specs), mf.peers...), append(slices.Clip(allow), mf.allow...)
	}
	if len(specs) > MaxPeers || len(allow) > MaxAllowList {
		return nil, fmt.Errorf("%d peers and %d allowed observers, at most %d and %d", len(specs), len(allow), MaxPeers, MaxAllowList)
	}
	for _, spec := range specs {
		p, err := parsePeer(spec)
		if err != nil {
			return nil, fmt.Errorf("Peers %q: %w", spec, err)
		}
		if slices.ContainsFunc(fed.peers, func(q fedPeer) bool { return q.did == p.did }) {
			return nil, fmt.Errorf("Peers: %s is listed twice", p.did)
		}
		fed.peers = append(fed.peers, p)
	}
	if err := fed.setAllowList(allow); err != nil {
		return nil, err
	}
	for _, spec := range c.WitnessLogs {
		if err := fed.addWitnessLog(spec); err != nil {
			return nil, fmt.Errorf("WitnessLogs %q: %w", spec, err)
		}
	}
	for _, p := range fed.peers {
		if p.desc != nil {
			if err := fed.addLog(p.desc.Origin, p.pub); err != nil {
				return nil, fmt.Errorf("Peers: %w", err)
			}
		}
	}
	var err error
	if fed.witnesses, err = submit.ParseWitnesses(c.Witnesses); err != nil {
		return nil, fmt.Errorf("Witnesses: %w", err)
	}
	if c.WitnessPolicy != "" {
		if fed.policy, err = readPolicy(c.WitnessPolicy); err != nil {
			return nil, fmt.Errorf("WitnessPolicy: %w", err)
		}
	}
	return fed, nil
}

// parsePeer reads "did:key:…=<multiaddr>" or a descriptor file.
func parsePeer(spec string) (fedPeer, error) {
	if did, addr, ok := strings.Cut(spec, "="); ok && strings.HasPrefix(did, "did:key:") {
		pub, err := awr.ParseDIDKey(did)
		if err != nil {
			return fedPeer{}, err
		}
		if !strings.Contains(addr, "/p2p/") {
			return fedPeer{}, errors.New("the multiaddr must end in /p2p/<peer ID>")
		}
		return fedPeer{did: did, pub: pub, gp: gossip.Peer{DID: did, Addr: addr}}, nil
	}
	raw, err := readBounded(spec, format.MaxObserverBytes)
	if err != nil {
		return fedPeer{}, err
	}
	o, err := format.ParseObserver(raw)
	if err != nil {
		return fedPeer{}, err
	}
	return fedPeer{did: o.DID, pub: o.LogKey, desc: o, gp: gossip.Peer{Descriptor: raw}}, nil
}

func (fed *fedSettings) setAllowList(list []string) error {
	for _, did := range list {
		if _, err := awr.ParseDIDKey(did); err != nil {
			return fmt.Errorf("AllowList %q: %w", did, err)
		}
		if !slices.Contains(fed.allow, did) {
			fed.allow = append(fed.allow, did)
		}
	}
	for _, p := range fed.peers {
		if !slices.Contains(fed.allow, p.did) {
			fed.allow = append(fed.allow, p.did)
		}
	}
	return nil
}

// addWitnessLog parses "ORIGIN=VKEY". A vkey's base64 (of 33 bytes) holds
// no "=", so the last one splits the two.
func (fed *fedSettings) addWitnessLog(spec string) error {
	i := strings.LastIndex(spec, "=")
	if i < 0 {
		return errors.New("want ORIGIN=VKEY")
	}
	origin, vkey := spec[:i], spec[i+1:]
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return fmt.Errorf("verifier key: %w", err)
	}
	if v.Name() != origin {
		return fmt.Errorf("the key is named %q, not %q", v.Name(), origin)
	}
	return fed.putLog(v)
}

func (fed *fedSettings) addLog(origin string, pub ed25519.PublicKey) error {
	v, err := format.NewVerifier(origin, pub)
	if err != nil {
		return err
	}
	return fed.putLog(v)
}

// putLog refuses one origin under two keys: the witness would cosign for
// whichever key signed, so either could fork the other.
func (fed *fedSettings) putLog(v note.Verifier) error {
	if have, ok := fed.logs[v.Name()]; ok && have.KeyHash() != v.KeyHash() {
		return fmt.Errorf("log %q is named with two keys", v.Name())
	}
	fed.logs[v.Name()] = v
	return nil
}

func readPolicy(path string) (*format.Policy, error) {
	b, err := readBounded(path, maxPolicyBytes)
	if err != nil {
		return nil, err
	}
	return format.ParsePolicy(b)
}

// readBounded reads a small file whole, refusing one over max bytes.
func readBounded(path string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) > max {
		return nil, fmt.Errorf("reading %s: over %d bytes", path, max)
	}
	return b, nil
}
