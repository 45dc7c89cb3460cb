package trap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Namespace name prefixes: everything named so belongs to a Pool, and
// Sweep removes what a crashed owner left behind.
const (
	SandboxPrefix = "histor-sbx-"
	TrapPrefix    = "histor-trp-"
)

// Config says how a Pool builds networks. Zero values take the defaults.
type Config struct {
	// Addresses is the IPv4 pool the per-run /30s come from, one /30 per
	// concurrent run. Default 10.231.0.0/16 (16,384 runs at once). It must
	// not overlap anything the host routes: the sandbox side never sees the
	// host's routes, but an operator reading addresses should not be misled.
	Addresses netip.Prefix
	// CAFile is where the trap CA's certificate (never its key, which stays
	// in memory) is written, mode 0644, for the run to mount and name in
	// NODE_EXTRA_CA_CERTS, SSL_CERT_FILE and REQUESTS_CA_BUNDLE. Required.
	CAFile string
	// MaxRecords bounds the records one Network keeps; beyond it records
	// are dropped and Records says truncated. Default 10,000.
	MaxRecords int
	// Handlers bounds the TCP connections one Network serves at once; a
	// connection beyond it is recorded as overloaded and closed. Default 32.
	Handlers int
	// SocketTimeout bounds every read and write of a trap. Default 5 s.
	SocketTimeout time.Duration
	// Logger receives setup, teardown and trap failures. Nil discards.
	Logger *slog.Logger
	// Registry receives the traps' metrics. Nil registers none.
	Registry prometheus.Registerer
}

// Defaults, HISTOR's bounds.
const (
	DefaultMaxRecords    = 10_000
	DefaultHandlers      = 32
	DefaultSocketTimeout = 5 * time.Second
)

// DefaultAddresses is the default pool.
var DefaultAddresses = netip.MustParsePrefix("10.231.0.0/16")

// Pool owns the trap CA and hands out one address block per Network. One
// Pool per host: Sweep removes every namespace named with the prefixes,
// whoever made it.
type Pool struct {
	cfg     Config
	log     *slog.Logger
	ca      *authority
	metrics *metrics

	mu   sync.Mutex
	used map[int]bool    // slots in use, guarded by mu
	ids  map[string]bool // run ids of open networks, guarded by mu
}

// NewPool checks cfg, makes the trap CA and writes its certificate.
func NewPool(cfg Config) (*Pool, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	ca, err := newAuthority(time.Now())
	if err != nil {
		return nil, fmt.Errorf("making trap CA: %w", err)
	}
	if err := os.WriteFile(cfg.CAFile, ca.pem, 0o644); err != nil {
		return nil, fmt.Errorf("writing trap CA certificate: %w", err)
	}
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, fmt.Errorf("registering trap metrics: %w", err)
	}
	return &Pool{cfg: cfg, log: cfg.Logger, ca: ca, metrics: m, used: map[int]bool{}, ids: map[string]bool{}}, nil
}

func (c *Config) fill() error {
	if !c.Addresses.IsValid() {
		c.Addresses = DefaultAddresses
	}
	if !c.Addresses.Addr().Is4() || c.Addresses.Bits() > 30 {
		return fmt.Errorf("trap address pool %s: want an IPv4 prefix of /30 or wider", c.Addresses)
	}
	c.Addresses = c.Addresses.Masked()
	if c.CAFile == "" {
		return errors.New("trap config: CAFile is required")
	}
	if c.MaxRecords <= 0 {
		c.MaxRecords = DefaultMaxRecords
	}
	if c.Handlers <= 0 {
		c.Handlers = DefaultHandlers
	}
	if c.SocketTimeout <= 0 {
		c.SocketTimeout = DefaultSocketTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// CAFile is the host path of the trap CA certificate.
func (p *Pool) CAFile() string { return p.cfg.CAFile }

// Close takes the pool's series off its registry, so a pool made later on it registers
// anew. The networks it handed out are each closed by their own Close.
func (p *Pool) Close() { p.metrics.unregister() }

// CACertPEM is the trap CA certificate.
func (p *Pool) CACertPEM() []byte { return p.ca.pem }

// CAEnv gives the variables that make Node, OpenSSL-based tools and Python
// requests accept the trap CA, given where the run mounts CAFile.
func CAEnv(pathInSandbox string) []string {
	return []string{
		"NODE_EXTRA_CA_CERTS=" + pathInSandbox,
		"SSL_CERT_FILE=" + pathInSandbox,
		"REQUESTS_CA_BUNDLE=" + pathInSandbox,
	}
}

// slots is how many /30s the pool holds.
func (p *Pool) slots() int { return 1 << (30 - p.cfg.Addresses.Bits()) }

// take reserves a slot for run id.
func (p *Pool) take(id string) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ids[id] {
		return 0, fmt.Errorf("run id %q is open already", id)
	}
	for i := range p.slots() {
		if !p.used[i] {
			p.used[i], p.ids[id] = true, true
			return i, nil
		}
	}
	return 0, ErrPoolExhausted
}

func (p *Pool) give(slot int, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.used, slot)
	delete(p.ids, id)
}

// ErrPoolExhausted says every /30 of the pool is in use.
var ErrPoolExhausted = errors.New("trap address pool exhausted")

// addrs gives the trap and sandbox addresses of a slot: .1 and .2 of its /30.
func (p *Pool) addrs(slot int) (trapAddr, sandboxAddr netip.Addr) {
	b := p.cfg.Addresses.Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(slot) * 4
	at := func(off uint32) netip.Addr {
		x := v + off
		return netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)})
	}
	return at(1), at(2)
}

// Remove deletes the two namespaces of the network with run id id, as a
// Network's Close does, for an owner that died before closing it: the
// sweep of an abandoned work directory names each network its runs had.
// A namespace already gone is not an error.
func Remove(ctx context.Context, id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("removing trap network: bad run id %q", id)
	}
	if err := errors.Join(deleteNetns(ctx, SandboxPrefix+id), deleteNetns(ctx, TrapPrefix+id)); err != nil {
		return fmt.Errorf("removing trap network %s: %w", id, err)
	}
	return nil
}

// deleteNetns removes a named namespace; one already gone is not an error.
func deleteNetns(ctx context.Context, name string) error {
	if _, err := os.Stat(filepath.Join(netnsDir, name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return run(ctx, "", "ip", "netns", "delete", name)
}
