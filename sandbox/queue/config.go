package queue

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"
)

// Config is the node's side of the queue.
type Config struct {
	// DataDir is the node's data directory; the embedded server keeps its
	// JetStream store under DataDir/queue, so queued jobs and pending-job
	// state survive a restart. Required unless URL is set.
	DataDir string
	// Listen is the host:port workers connect to, 127.0.0.1:4222 by
	// default; port 0 picks a free one (see Queue.ClientURL). The server
	// listens only when Workers is non-empty: a node without external
	// workers opens no port at all.
	Listen string
	// Workers are the NKey public keys (U…) of the workers allowed in. Each
	// may only fetch from the jobs consumer, ack, publish results under its
	// own key and read its own inbox.
	Workers []string
	// TLS, when set, is required of every worker connection. TLSVerify also
	// requires a client certificate signed by TLS.ClientCAs (mTLS).
	TLS       *tls.Config
	TLSVerify bool
	// MaxStore and MaxMemory cap JetStream's file and memory use
	// (defaults 1 GiB and 64 MiB).
	MaxStore  int64
	MaxMemory int64

	// URL, when set, connects to an external NATS cluster instead of
	// embedding a server; NATSOptions carry its credentials and TLS.
	URL         string
	NATSOptions []nats.Option

	// AckWait is how long a worker may hold a job without a progress beat
	// before it is redelivered (default 60 s; workers beat every third).
	AckWait time.Duration
	// MaxDeliver is how many deliveries a job gets before it is recorded
	// as poisoned (default 3).
	MaxDeliver int
	// Duplicates is the window within which a target is queued once
	// (default 24 h).
	Duplicates time.Duration
	// PendingTTL bounds how long an issued job waits for its result before
	// the node forgets it (default 7 days).
	PendingTTL time.Duration
	// MaxResultBytes bounds one result message (default 4 MiB);
	// MaxEvidenceBytes and MaxEvidence bound its evidence (defaults 1 MiB
	// and 32 records).
	MaxResultBytes   int
	MaxEvidenceBytes int
	MaxEvidence      int
	// SweepEvery is how often the node looks for jobs that ran out of
	// deliveries while no advisory reached it (default AckWait).
	SweepEvery time.Duration
	// Observer is the observer version written into poisoned observations.
	Observer string

	// Logger is required. Registry receives the queue's metrics; nil keeps
	// them in a private registry.
	Logger   *slog.Logger
	Registry prometheus.Registerer
}

// Defaults.
const (
	DefaultListen     = "127.0.0.1:4222"
	DefaultAckWait    = 60 * time.Second
	DefaultMaxDeliver = 3
)

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defInt := func(n *int, v int) {
		if *n == 0 {
			*n = v
		}
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.MaxStore == 0 {
		c.MaxStore = 1 << 30
	}
	if c.MaxMemory == 0 {
		c.MaxMemory = 64 << 20
	}
	def(&c.AckWait, DefaultAckWait)
	defInt(&c.MaxDeliver, DefaultMaxDeliver)
	def(&c.Duplicates, 24*time.Hour)
	def(&c.PendingTTL, 7*24*time.Hour)
	defInt(&c.MaxResultBytes, 4<<20)
	defInt(&c.MaxEvidenceBytes, 1<<20)
	defInt(&c.MaxEvidence, 32)
	def(&c.SweepEvery, c.AckWait)
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
}

func (c *Config) validate() error {
	if c.Logger == nil {
		return errors.New("queue config: no logger")
	}
	if c.URL == "" && c.DataDir == "" {
		return errors.New("queue config: no data dir for the embedded server")
	}
	if c.URL != "" && (len(c.Workers) > 0 || c.TLS != nil) {
		return errors.New("queue config: workers and TLS belong to the external cluster's own configuration when URL is set")
	}
	for _, w := range c.Workers {
		if !nkeys.IsValidPublicUserKey(w) {
			return fmt.Errorf("queue config: worker %q is not an nkey user public key", w)
		}
	}
	if c.TLSVerify && (c.TLS == nil || c.TLS.ClientCAs == nil) {
		return errors.New("queue config: TLSVerify needs TLS with ClientCAs")
	}
	if c.MaxDeliver < 1 {
		return fmt.Errorf("queue config: MaxDeliver %d, want at least 1", c.MaxDeliver)
	}
	if c.AckWait < time.Second {
		return fmt.Errorf("queue config: AckWait %v, want at least 1s", c.AckWait)
	}
	return nil
}
