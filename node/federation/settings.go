package federation

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
	// MaxPeers bounds Peers, with the members file's; MaxAllowList the observers allowed;
	// MaxWitnessLogs WitnessLogs; MaxWitnesses Witnesses.
	MaxPeers       = 256
	MaxAllowList   = 4096
	MaxWitnessLogs = 1024
	MaxWitnesses   = 64
	// maxPolicyBytes bounds a tlog-policy file.
	maxPolicyBytes = 64 << 10
	// MaxMembersFileBytes bounds a members file (MembersFile).
	MaxMembersFileBytes = 1 << 20
)

// Settings is the federation's members and witnesses, parsed and checked (ParseSettings).
type Settings struct {
	peers     []member
	allow     []string                 // AllowList and every peer's did:key, without repeats
	logs      map[string]note.Verifier // WitnessLogs and descriptor peers' logs, by origin
	witnesses []submit.Witness         // Witnesses
	policy    *format.Policy           // WitnessPolicy's, nil when none was given
}

// member is one entry of Members.Peers.
type member struct {
	did  string
	pub  ed25519.PublicKey // the peer's log key, from its did:key
	desc *format.Observer  // nil for a did:key=multiaddr peer
	gp   gossip.Peer
}

// Members is where the federation's settings come from: the node's flags and its members
// file. Each field is the node Config's field of that name.
type Members struct {
	// Peers are the peers, each a descriptor file's path or "did:key:…=<multiaddr>".
	Peers []string
	// AllowList are the did:keys of further observers this node counts.
	AllowList []string
	// MembersFile names a file of further Peers and AllowList entries, one a line; "": none.
	// A reload reads it again.
	MembersFile string
	// WitnessLogs are further logs the witness cosigns, each "ORIGIN=VKEY".
	WitnessLogs []string
	// Witnesses are the external witnesses each checkpoint is submitted to.
	Witnesses []string
	// WitnessPolicy is a c2sp.org/tlog-policy file's path; "": the default policy.
	WitnessPolicy string
}

// ParseSettings reads the federation settings: m's fields, the members file and every
// descriptor file they name. A reload of the members file runs it again.
func ParseSettings(m Members) (*Settings, error) {
	fed := &Settings{logs: map[string]note.Verifier{}}
	specs, allow := m.Peers, m.AllowList
	if m.MembersFile != "" {
		mf, err := readMembersFile(m.MembersFile)
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
		if slices.ContainsFunc(fed.peers, func(q member) bool { return q.did == p.did }) {
			return nil, fmt.Errorf("Peers: %s is listed twice", p.did)
		}
		fed.peers = append(fed.peers, p)
	}
	if err := fed.setAllowList(allow); err != nil {
		return nil, err
	}
	for _, spec := range m.WitnessLogs {
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
	if fed.witnesses, err = submit.ParseWitnesses(m.Witnesses); err != nil {
		return nil, fmt.Errorf("Witnesses: %w", err)
	}
	if m.WitnessPolicy != "" {
		if fed.policy, err = readPolicy(m.WitnessPolicy); err != nil {
			return nil, fmt.Errorf("WitnessPolicy: %w", err)
		}
	}
	return fed, nil
}

// parsePeer reads "did:key:…=<multiaddr>" or a descriptor file.
func parsePeer(spec string) (member, error) {
	if did, addr, ok := strings.Cut(spec, "="); ok && strings.HasPrefix(did, "did:key:") {
		pub, err := awr.ParseDIDKey(did)
		if err != nil {
			return member{}, err
		}
		if !strings.Contains(addr, "/p2p/") {
			return member{}, errors.New("the multiaddr must end in /p2p/<peer ID>")
		}
		return member{did: did, pub: pub, gp: gossip.Peer{DID: did, Addr: addr}}, nil
	}
	raw, err := readBounded(spec, format.MaxObserverBytes)
	if err != nil {
		return member{}, err
	}
	o, err := format.ParseObserver(raw)
	if err != nil {
		return member{}, err
	}
	return member{did: o.DID, pub: o.LogKey, desc: o, gp: gossip.Peer{Descriptor: raw}}, nil
}

func (fed *Settings) setAllowList(list []string) error {
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
func (fed *Settings) addWitnessLog(spec string) error {
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

func (fed *Settings) addLog(origin string, pub ed25519.PublicKey) error {
	v, err := format.NewVerifier(origin, pub)
	if err != nil {
		return err
	}
	return fed.putLog(v)
}

// putLog refuses one origin under two keys: the witness would cosign for
// whichever key signed, so either could fork the other.
func (fed *Settings) putLog(v note.Verifier) error {
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
