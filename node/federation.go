package node

import (
	"errors"
	"fmt"

	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/node/federation"
)

// The federation's glue (the part itself is node/federation): its Config from the node's,
// its checks at start-up, and the node's federation methods.

// Bounds of the federation settings (node/federation's).
const (
	MaxPeers            = federation.MaxPeers
	MaxAllowList        = federation.MaxAllowList
	MaxWitnessLogs      = federation.MaxWitnessLogs
	MaxWitnesses        = federation.MaxWitnesses
	MaxMembersFileBytes = federation.MaxMembersFileBytes
)

// DefaultMirrorPoll is Config.MirrorPoll's default.
const DefaultMirrorPoll = federation.DefaultMirrorPoll

// newFederation makes the node's federation part from its Config and seed.
func newFederation(cfg Config, id identity, seed *keys.Seed) *federation.Federation {
	return federation.New(federation.Config{
		Dir: cfg.DataDir, LogOrigin: cfg.LogOrigin, LogKey: id.logKey, LogVkey: id.logVkey, DID: id.did,
		WitnessName: cfg.WitnessName, WitnessKey: seed.WitnessKey(), P2PKey: seed.P2PKey(), PublicURL: cfg.PublicURL,
		Members: cfg.members(), Settings: cfg.fed, P2PListen: cfg.P2PListen, GossipHeartbeat: cfg.GossipHeartbeat,
		MirrorPoll: cfg.MirrorPoll, MirrorMaxLeaves: cfg.MirrorMaxLeaves, MirrorMaxBundleBytes: cfg.MirrorMaxBundleBytes,
		MirrorURLs: cfg.MirrorURLs, Logger: cfg.Logger, Registerer: cfg.registerer(), Now: cfg.Now,
	})
}

// members is where the federation's settings come from.
func (c *Config) members() federation.Members {
	return federation.Members{Peers: c.Peers, AllowList: c.AllowList, MembersFile: c.MembersFile,
		WitnessLogs: c.WitnessLogs, Witnesses: c.Witnesses, WitnessPolicy: c.WitnessPolicy}
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
	fed, err := federation.ParseSettings(c.members())
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	c.fed = fed
	return nil
}

// fedParts are the federation's parts (node/federation), in their order, over the log.
func (n *Node) fedParts() []part {
	var out []part
	for _, p := range n.fed.Parts(func() federation.Log { return n.log }) {
		out = append(out, part{p.Name, p.Open, p.Close})
	}
	return out
}

// ReloadMembers reads the members file again, with every descriptor file it and Peers name,
// and makes the open node's federation what they say, without a restart (node/federation's
// Reload says how). On an error nothing changes and the error says why.
func (n *Node) ReloadMembers() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fed.Reload()
}

// WitnessDir is where the node keeps its witness's Pebble state:
// DataDir/witness.
func (n *Node) WitnessDir() string { return n.fed.WitnessDir() }

// MirrorDir is where the node keeps its mirrors of its peers' logs: DataDir/mirror.
func (n *Node) MirrorDir() string { return n.fed.MirrorDir() }

// PeersDir is where the node keeps its view of the federation's
// observations: DataDir/peers.
func (n *Node) PeersDir() string { return n.fed.PeersDir() }

// DescriptorPath is where a node running gossip writes its signed observer
// descriptor at start, for its peers' Config.Peers: DataDir/observer.descriptor.
func (n *Node) DescriptorPath() string { return n.fed.DescriptorPath() }

// WriteDescriptor signs this observer's descriptor as it would at start and writes it to
// path (through a temporary file renamed over it), for peers to configure before this node
// first runs; the node need not be open.
func (n *Node) WriteDescriptor(path string) ([]byte, error) { return n.fed.WriteDescriptor(path) }

// Descriptor returns this node's signed observer descriptor as it would
// write it now; the node need not be open.
func (n *Node) Descriptor() ([]byte, error) { return n.fed.Descriptor() }

// PeerID is the libp2p peer ID of this node's gossip host, derived from its seed.
func (n *Node) PeerID() string { return n.fed.PeerID() }

// fedMount is what the federation's routes (node/federation) read of the node: a.fed on
// every request.
func (a *api) fedMount() federation.Mount {
	return federation.Mount{
		Federation: func() *federation.Federation { return a.fed },
		Head:       func() hlog.Head { return a.log.Latest() },
		Checkpoint: a.serveCheckpoint,
		Logger:     a.logger,
	}
}

// fedCheckpointRoutes is /log/checkpoint, with the cosignatures the federation collected.
func (a *api) fedCheckpointRoutes() []Route { return federation.CheckpointRoutes(a.fedMount()) }

// fedRoutes are the mirrors', the witness's and the evidence's routes.
func (a *api) fedRoutes() []Route { return federation.Routes(a.fedMount()) }
