package gossip

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/prometheus/client_golang/prometheus"
)

// Config is everything New needs. Durations left zero take the defaults named on each field.
type Config struct {
	// Identity is the libp2p host key: keys.Seed.P2PKey(), never the log or witness key.
	Identity ed25519.PrivateKey
	// Descriptor is this observer's signed descriptor (format.SignObserver); its host key
	// must be Identity's public key. Peers fetch it over the descriptor protocol.
	Descriptor []byte
	// Listen is where the host accepts connections: TCP (/ip4/…/tcp/N) and QUIC
	// (/ip4/…/udp/N/quic-v1) multiaddrs only. Empty means the host only dials.
	Listen []string
	// Peers are the federation peers this host dials and keeps connected to. Each must be
	// an allow-listed observer.
	Peers []Peer
	// AllowList is the did:keys of the observers whose heads, observations and connections
	// count; this observer's own did:key is always on it.
	AllowList []string
	// Log is this node's log, served to peers.
	Log Log
	// AddCheckpoint, when set, answers the add-checkpoint protocol (the node's witness).
	AddCheckpoint AddCheckpointFunc
	// Fetch, when set, answers the fetch protocol: a path of this node's HTTP API that a
	// mirror reads ("log/checkpoint", "log/tile/…", "mirror/<did>/…", "evidence/<sri>"),
	// answered with an HTTP status and body of at most MaxFetchBytes.
	Fetch FetchFunc
	// VerifyEvidence checks an equivocation bundle offered on the evidence topic; it must be
	// a pure function of its input. Nil ignores every bundle.
	VerifyEvidence func([]byte) error

	// OnHead receives each newly accepted head of a peer, from gossip or from a pull.
	OnHead func(*Head)
	// OnObservation receives each accepted observation digest of a peer.
	OnObservation func(*Observation)
	// OnEvidence receives each accepted evidence bundle, as received.
	OnEvidence func([]byte)
	// OnConflict receives two verified heads of one observer at one size with different
	// roots: the seed of an equivocation bundle.
	OnConflict func(a, b *Head)

	// Logger receives the host's messages; nil discards them.
	Logger *slog.Logger
	// Registerer receives libp2p's metrics and the histor_gossip_* metrics; nil registers
	// none (never the global registry).
	Registerer prometheus.Registerer

	// Heartbeat is GossipSub's heartbeat; 0 means 1 s.
	Heartbeat time.Duration
	// Republish is how often the latest head is published again; 0 means 1 min. Peers drop
	// a message ID they saw within half of it, so a republish reaches only those who missed it.
	Republish time.Duration
	// ReconnectMin and ReconnectMax bound the backoff between dials of a lost peer; 0 means
	// 1 s and 5 min.
	ReconnectMin, ReconnectMax time.Duration
	// RequestTimeout bounds one request/response exchange; 0 means 10 s.
	RequestTimeout time.Duration
	// Host, when set, is used instead of building one (tests pass a mocknet host); Listen,
	// the connection gater and libp2p's metrics then do not apply.
	Host host.Host
	// Now is this node's wall clock, answered on ProtoTime and compared with the peers'; nil
	// means time.Now.
	Now func() time.Time
}

// Peer is one federation peer: either its signed descriptor, or its did:key and one
// multiaddr ending in /p2p/<peer ID> (the descriptor is then fetched on connect).
type Peer struct {
	Descriptor []byte
	DID        string
	Addr       string
}

// Log is what the protocols serve from this node's log. Methods must be safe for concurrent
// use; a missing item is reported with an error wrapping ErrNotFound.
type Log interface {
	// Latest returns the newest head: its histor.sth/v1 document and its checkpoint note
	// (with any cosignatures collected); nil, nil while there is none.
	Latest() (sth, checkpoint []byte)
	ConsistencyProof(first, second uint64) ([][32]byte, error)
	InclusionProof(index, size uint64) ([][32]byte, error)
	// Label returns the label with this id and its leaf index.
	Label(id string) (index uint64, label []byte, err error)
}

// AddCheckpointFunc answers a C2SP tlog-witness add-checkpoint request from the allow-listed
// observer did: status is the HTTP status the witness would answer (200, 403, 409, …) and
// body its response body.
type FetchFunc func(ctx context.Context, did, path string) (status int, body []byte)

type AddCheckpointFunc func(ctx context.Context, did string, request []byte) (status int, body []byte)

// ErrNotFound marks an item the log does not hold.
var ErrNotFound = errors.New("not found")

func (c *Config) withDefaults() Config {
	d := *c
	def := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	def(&d.Heartbeat, time.Second)
	def(&d.Republish, time.Minute)
	def(&d.ReconnectMin, time.Second)
	def(&d.ReconnectMax, 5*time.Minute)
	def(&d.RequestTimeout, 10*time.Second)
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return d
}

func (c *Config) validate() error {
	if len(c.Identity) != ed25519.PrivateKeySize {
		return errors.New("identity is not an Ed25519 private key")
	}
	if c.Log == nil {
		return errors.New("no log")
	}
	if c.ReconnectMin > c.ReconnectMax {
		return fmt.Errorf("reconnect backoff %v exceeds its maximum %v", c.ReconnectMin, c.ReconnectMax)
	}
	if c.Host == nil {
		for _, a := range c.Listen {
			if err := checkListen(a); err != nil {
				return fmt.Errorf("listen address %q: %w", a, err)
			}
		}
	}
	return nil
}
