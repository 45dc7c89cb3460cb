package pkgruns

import (
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/observer"
	"github.com/histor-observer/histor/sandbox/queue"
)

// Settings are the node's sandbox part: the work queue that carries
// package observations to workers, the scheduler that fills it, and the
// handler that turns what comes back into labels (docs/operations.md,
// "Sandbox workers"). The node's Config.Sandbox is this type.
//
// The part is off unless Enabled: a node with it off observes no packages
// (their targets stay listed, unobserved, and the census counts them), so
// the offline demo and every library user that does not ask for it open no
// queue and no port. It is never switched on by runsc being installed: a
// sandbox host needs its Debian roots built first, which takes minutes and
// the network, and the operator decides that.
type Settings struct {
	// Enabled opens the queue, the scheduler and the results handler.
	Enabled bool

	// NATS, when set, is an external NATS cluster with JetStream the node
	// queues jobs on instead of embedding a server; its workers, their
	// keys and TLS are that cluster's configuration. NATSOptions carry the
	// node's own credentials and TLS for it.
	NATS        string
	NATSOptions []nats.Option

	// Listen is where the embedded server accepts workers (default
	// 127.0.0.1:4222, loopback only; port 0 picks one). It listens only
	// when Workers or LocalWorkers name a worker.
	Listen string
	// Workers are the NKey public keys (U…) of the workers allowed to take
	// jobs; `histor sandbox worker-key FILE` makes one.
	Workers []string
	// TLS, when set, is required of every worker connection; TLSVerify also
	// requires a client certificate signed by TLS.ClientCAs.
	TLS       *tls.Config
	TLSVerify bool

	// LocalWorkers runs that many observations at once inside the node
	// itself, as one in-process worker over loopback, so one binary still
	// does everything. 0 (the default) runs none: jobs wait for workers on
	// other hosts. Needs Observe, or runsc and the roots the observer
	// builds (see RootfsDir).
	LocalWorkers int
	// Observe is what the local worker runs for a job; nil uses the
	// sandbox observer (sandbox/observer) on Host.
	Observe queue.Observe
	// Host is where and with what the local worker observes, as for
	// `histor sandbox worker`: Host.Dir defaults to DataDir/sandbox (which
	// also holds the local worker's NKey seed), Host.RootfsDir to the user
	// cache directory's histor/rootfs, Host.NPMRegistry and Host.PyPI to
	// NPMRegistry and PyPI below.
	Host observer.Host

	// Interval is how often the scheduler looks for versions to observe,
	// besides after every crawl (default 1h).
	Interval time.Duration
	// MaxJobsPerRound bounds the jobs one round queues (default 64), and
	// MaxResolvesPerRound the registry look-ups it makes for targets whose
	// listing names no version (default 4 × MaxJobsPerRound).
	MaxJobsPerRound     int
	MaxResolvesPerRound int
	// NPMRegistry and PyPI are where the scheduler resolves the latest
	// version of a package whose listing names none (defaults: the public
	// registries).
	NPMRegistry, PyPI string

	// Limits bound every run (default sandbox.DefaultLimits()).
	Limits sandbox.Limits
	// AckWait and MaxDeliver are the queue's (defaults 60 s and 3): how
	// long a silent worker holds a job, and how many deliveries a job gets
	// before it is recorded as poisoned.
	AckWait    time.Duration
	MaxDeliver int
}

// Defaults of Settings.
const (
	DefaultInterval        = time.Hour
	DefaultMaxJobsPerRound = 64
)

// ApplyDefaults fills in the settings left zero; dataDir is the node's
// data directory, under which Host.Dir defaults to "sandbox".
func (s *Settings) ApplyDefaults(dataDir string) {
	if s.Interval == 0 {
		s.Interval = DefaultInterval
	}
	if s.MaxJobsPerRound == 0 {
		s.MaxJobsPerRound = DefaultMaxJobsPerRound
	}
	if s.MaxResolvesPerRound == 0 {
		s.MaxResolvesPerRound = 4 * s.MaxJobsPerRound
	}
	if s.Host.Dir == "" && dataDir != "" {
		s.Host.Dir = filepath.Join(dataDir, "sandbox")
	}
	if s.Host.NPMRegistry == "" {
		s.Host.NPMRegistry = s.NPMRegistry
	}
	if s.Host.PyPI == "" {
		s.Host.PyPI = s.PyPI
	}
	if s.Limits == (sandbox.Limits{}) {
		s.Limits = sandbox.DefaultLimits()
	}
}

// Check validates settings whose defaults are applied. Its errors name the
// fields as the node's Config holds them (Sandbox.…).
func (s *Settings) Check() error {
	switch {
	case s.Interval < time.Minute:
		return fmt.Errorf("config: Sandbox.Interval %v, want at least 1m", s.Interval)
	case s.MaxJobsPerRound < 1 || s.MaxResolvesPerRound < 1:
		return errors.New("config: Sandbox.MaxJobsPerRound and MaxResolvesPerRound must be positive")
	case s.LocalWorkers < 0:
		return errors.New("config: Sandbox.LocalWorkers must not be negative")
	case s.NATS != "" && (len(s.Workers) > 0 || s.TLS != nil):
		return errors.New("config: Sandbox.Workers and TLS belong to the external cluster's configuration when Sandbox.NATS is set")
	case s.NATS != "" && s.LocalWorkers > 0:
		return errors.New("config: Sandbox.LocalWorkers need the embedded queue; run `histor sandbox worker` against an external cluster")
	case s.LocalWorkers > 0 && s.TLS != nil:
		// The local worker talks to the embedded server over loopback in
		// plaintext; a node that requires TLS of its workers runs them
		// elsewhere.
		return errors.New("config: Sandbox.LocalWorkers cannot be combined with Sandbox.TLS")
	case s.TLSVerify && (s.TLS == nil || s.TLS.ClientCAs == nil):
		return errors.New("config: Sandbox.TLSVerify needs TLS with ClientCAs")
	}
	for _, w := range s.Workers {
		if !nkeys.IsValidPublicUserKey(w) {
			return fmt.Errorf("config: Sandbox.Workers: %q is not an NKey user public key (U…)", w)
		}
	}
	return nil
}
