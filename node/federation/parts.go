package federation

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/gossip"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/witness"
	"github.com/histor-observer/histor/witness/submit"
)

// Config is what the federation needs of the node: its keys and names, where its stores
// live, its members and the gossip and mirror settings. The host fills it from its own
// validated Config; New checks nothing again.
type Config struct {
	// Dir is the node's data directory: the witness, the mirrors, the peer view and the
	// descriptor live under it (WitnessDir, MirrorDir, PeersDir, DescriptorPath).
	Dir string
	// LogOrigin is the node's log's origin; LogKey its key (it signs the descriptor, and
	// its public half is the key the witnesses check); LogVkey its note verifier key; DID
	// the did:key of LogKey.
	LogOrigin string
	LogKey    ed25519.PrivateKey
	LogVkey   string
	DID       string
	// WitnessName and WitnessKey are the witness's cosignature key; P2PKey the gossip
	// host's identity.
	WitnessName string
	WitnessKey  ed25519.PrivateKey
	P2PKey      ed25519.PrivateKey
	// PublicURL is the node's public URL, for the descriptor (https only).
	PublicURL string
	// Members is where Settings came from, read again by Reload; Settings is them parsed.
	Members  Members
	Settings *Settings
	// P2PListen are the gossip host's multiaddrs; none runs no gossip host.
	P2PListen       []string
	GossipHeartbeat time.Duration
	// MirrorPoll is how often every counted observer's log is synced; MirrorMaxLeaves and
	// MirrorMaxBundleBytes bound what one mirror takes; MirrorURLs also reads each
	// descriptor peer's log from its https URL.
	MirrorPoll           time.Duration
	MirrorMaxLeaves      uint64
	MirrorMaxBundleBytes int
	MirrorURLs           bool
	// Logger and Registerer take the federation's logs and its parts' series.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// Log is what the federation reads of the node's log: its heads, proofs and tiles for
// the submitter, gossip and the peers' mirrors. *log.Log is one.
type Log interface {
	Latest() hlog.Head
	ConsistencyProof(first, second uint64) ([][32]byte, error)
	InclusionProof(index, size uint64) ([][32]byte, error)
	LabelIndex(id string) (uint64, error)
	Entry(i uint64) ([]byte, error)
	EntryBundle(index uint64, width int) ([]byte, error)
	HashTile(level, index uint64, width int) ([]byte, error)
	Evidence(kind, sri string) ([]byte, error)
}

// Part is one piece of the federation with its open and close, for the host to open in
// the order Parts gives and close in reverse.
type Part struct {
	Name  string
	Open  func(ctx context.Context) error
	Close func() error
}

// Parts are the federation's pieces in opening order: the witness, the witness
// submitter, gossip, the mirror, the peer view and the loops between them. log is the
// node's log, read when the first part opens: the host opens its log before these.
func (f *Federation) Parts(log func() Log) []Part {
	return []Part{
		{"witness", func(ctx context.Context) error { return f.openWitness(ctx, log()) }, f.closeWitness},
		{"witness submitter", f.openSubmitter, f.closeSubmitter},
		{"gossip", f.openGossip, f.closeGossip},
		{"mirror", f.openMirror, f.closeMirror},
		{"peers", f.openPeers, f.closePeers},
		{"federation", f.openLoops, f.closeLoops},
	}
}

// WitnessDir is where the witness keeps its Pebble state: Dir/witness.
func (f *Federation) WitnessDir() string { return filepath.Join(f.cfg.Dir, "witness") }

// openWitness opens the witness when there is a log to witness. It also
// witnesses this node's own log, so that evidence of a fork of it (a key
// used elsewhere, a data directory restored from an old copy) is kept and
// served here too; a witness's cosignature of its own log counts for
// nothing, and the default policy leaves it out.
func (f *Federation) openWitness(_ context.Context, lg Log) error {
	f.log = lg
	fed := f.settings.Load()
	own := mustVerifier(f.cfg.LogOrigin, f.cfg.LogKey)
	f.setVerifier(own)
	if len(fed.logs) == 0 && len(fed.peers) == 0 && f.cfg.Members.MembersFile == "" {
		return nil // nothing to witness, nor a members file that may name some
	}
	logs := maps.Clone(fed.logs)
	if have, ok := logs[own.Name()]; ok && have.KeyHash() != own.KeyHash() {
		return fmt.Errorf("WitnessLogs names this node's origin %q with another key", own.Name())
	}
	logs[own.Name()] = own
	w, err := witness.New(witness.Config{
		Dir: f.WitnessDir(), Name: f.cfg.WitnessName, Key: f.cfg.WitnessKey, Logs: logs,
		Clock: f.cfg.Now, Logger: f.cfg.Logger, Registerer: f.cfg.Registerer,
		OnEvidence: func(e witness.Evidence) { f.queueEvidence(evidenceJob{e.Bundle, fromWitness}) },
	})
	if err != nil {
		return err
	}
	for _, v := range fed.logs {
		f.setVerifier(v)
	}
	f.wit.Store(w)
	return nil
}

func (f *Federation) closeWitness() error {
	w := f.wit.Swap(nil)
	f.log = nil
	if w == nil {
		return nil
	}
	return w.Close()
}

// openSubmitter makes the submitter of this log's checkpoints: to every
// configured witness over HTTP, and to every descriptor peer's witness over
// gossip (through submitTransport).
func (f *Federation) openSubmitter(context.Context) error {
	s, policy, err := f.newSubmitter(f.settings.Load())
	if err != nil || s == nil {
		return err
	}
	f.policy.Store(policy)
	f.sub.Store(s)
	return nil
}

// newSubmitter makes the submitter to fed's witnesses; nil when there are none.
func (f *Federation) newSubmitter(fed *Settings) (*submit.Submitter, *format.Policy, error) {
	targets, p2p := f.witnessTargets(fed)
	if len(targets) == 0 {
		return nil, nil, nil
	}
	policy, err := f.witnessPolicy(fed, targets)
	if err != nil {
		return nil, nil, err
	}
	s, err := submit.New(submit.Config{
		Origin: f.cfg.LogOrigin, Key: f.cfg.LogKey.Public().(ed25519.PublicKey), Witnesses: targets,
		Proof: f.log.ConsistencyProof, Policy: policy, Logger: f.cfg.Logger, Registerer: f.cfg.Registerer,
		OnCosigned: func() { signal(f.cosigned) },
		Client: &http.Client{Transport: newSubmitTransport(p2p, f.Gossip),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	})
	if err != nil {
		return nil, nil, err
	}
	return s, policy, nil
}

func (f *Federation) closeSubmitter() error {
	s := f.sub.Swap(nil)
	if s == nil {
		return nil
	}
	return s.Close()
}

// witnessTargets are Config.Witnesses and then each descriptor peer's
// witness, reached through a host name no resolver answers (RFC 6761
// .invalid) that submitTransport routes to the peer over gossip.
func (f *Federation) witnessTargets(fed *Settings) ([]submit.Witness, map[string]string) {
	targets := append([]submit.Witness(nil), fed.witnesses...)
	p2p := map[string]string{}
	for i, p := range fed.peers {
		if p.desc == nil || len(f.cfg.P2PListen) == 0 {
			continue
		}
		host := fmt.Sprintf("peer-%d%s", i, p2pWitnessHost)
		p2p[host] = p.did
		targets = append(targets, submit.Witness{URL: "http://" + host, Cosigner: p.desc.Witness})
	}
	return targets, p2p
}

// witnessPolicy is WitnessPolicy's, or by default this log, every target,
// and a quorum of any one of them.
func (f *Federation) witnessPolicy(fed *Settings, targets []submit.Witness) (*format.Policy, error) {
	if fed.policy != nil {
		return fed.policy, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "log %s\n", f.cfg.LogVkey)
	var names []string
	for i, t := range targets {
		vkey, err := keys.CosignatureVerifierKey(t.Cosigner.Name, t.Cosigner.Key)
		if err != nil {
			return nil, err
		}
		names = append(names, fmt.Sprintf("w%d", i))
		fmt.Fprintf(&b, "witness w%d %s\n", i, vkey)
	}
	fmt.Fprintf(&b, "group any-witness any %s\nquorum any-witness\n", strings.Join(names, " "))
	p, err := format.ParsePolicy([]byte(b.String()))
	if err != nil {
		return nil, fmt.Errorf("making the default witness policy: %w", err)
	}
	return p, nil
}

func (f *Federation) openGossip(ctx context.Context) error {
	fed := f.settings.Load()
	if len(f.cfg.P2PListen) == 0 {
		return nil
	}
	desc, err := f.WriteDescriptor(f.DescriptorPath())
	if err != nil {
		return err
	}
	lg := f.log
	var peers []gossip.Peer
	for _, p := range fed.peers {
		peers = append(peers, p.gp)
	}
	g, err := gossip.New(gossip.Config{
		Identity: f.cfg.P2PKey, Descriptor: desc, Listen: f.cfg.P2PListen, Peers: peers, AllowList: fed.allow,
		Log: gossipLog{log: lg, f: f}, AddCheckpoint: f.addCheckpoint, VerifyEvidence: f.verifyEvidence,
		Fetch:  func(_ context.Context, _, path string) (int, []byte) { return f.fetch(lg, path) },
		OnHead: f.onPeerHead, OnObservation: f.onObservation, OnEvidence: func(b []byte) { f.queueEvidence(evidenceJob{b, fromGossip}) },
		OnConflict: f.onConflict, Logger: f.cfg.Logger, Registerer: f.cfg.Registerer,
		Heartbeat: f.cfg.GossipHeartbeat, Now: f.cfg.Now,
	})
	if err != nil {
		return err
	}
	if err := g.Start(ctx); err != nil {
		g.Close()
		return err
	}
	f.gos.Store(g)
	f.cfg.Logger.Info("gossip host up", "addrs", g.Addrs(), "descriptor", f.DescriptorPath())
	return nil
}

func (f *Federation) closeGossip() error {
	g := f.gos.Swap(nil)
	if g == nil {
		return nil
	}
	return g.Close()
}

// openLoops starts the loops: this log's heads to the witnesses and
// to gossip, peers' heads checked for consistency, evidence kept.
func (f *Federation) openLoops(context.Context) error {
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	f.goLoop(func() { f.headLoop(ctx) })
	f.goLoop(func() { f.peerLoop(ctx) })
	f.goLoop(func() { f.evidenceLoop(ctx) })
	f.goLoop(func() { f.mirrorLoop(ctx, f.cfg.MirrorPoll) })
	f.metrics.members.Set(float64(len(f.counted(f.settings.Load()))))
	f.open = true
	signal(f.ownHead) // the head the log opened with
	return nil
}

func (f *Federation) closeLoops() error {
	f.open = false
	f.cancel()
	f.wg.Wait()
	f.cancel = nil
	return nil
}
