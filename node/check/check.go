// Package check is the node's checker part: POST /api/v1/check, which
// compares the tool set a client holds with what this observer recorded at
// the same endpoint and answers with a signed histor.check/v1 document. The
// desk's /check page, the MCP face's check tool and the AIMarket
// histor.check@v1 capability answer through the same Checker, so they share
// its parser, its per-client limits and its signature.
package check

import (
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/internal/httpx"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/node/ratelimit"
)

// Type is the type member of every /check answer; it is inside the signed
// bytes, so an answer can never pass for a tree head or a label.
const Type = "histor.check/v1"

// Defaults of the per-client limits, HISTOR's.
const (
	DefaultChecksPerMinute = 30
	DefaultScansPerHour    = 20
	DefaultMaxClients      = 50_000
)

// ContributionsPerClientDay is the most targets one client's contributions
// count for in any 24 hours. With MaxClients (client, target) pairs
// tracked, filling that table takes MaxClients/ContributionsPerClientDay
// distinct clients in a day.
const ContributionsPerClientDay = 50

// Log is what the checker reads of the label log: the latest tree head,
// which every answer names, and the tool-set evidence a fresh scan of an
// observed set reads. *log.Log satisfies it.
type Log interface {
	Latest() hlog.Head
	Evidence(kind, sri string) ([]byte, error)
}

// PeerView gives the observers and agreement members of a server id
// (node/peers' Store.Members).
type PeerView func(id string) (observers []any, agreement map[string]any, err error)

// Config is what a Checker needs.
type Config struct {
	// Key signs the answers; DID is its issuer, named in every answer.
	Key ed25519.PrivateKey
	DID string
	// PublicURL prefixes the target's page and badge links; "" makes them
	// relative.
	PublicURL string
	// TrustedProxies are the peers whose X-Forwarded-For names the client.
	TrustedProxies []netip.Prefix
	// ChecksPerMinute is the most checks one client may make in any minute;
	// zero or less: no limit.
	ChecksPerMinute int
	// ScansPerHour is the most fresh pattern scans one client may cause in
	// any hour; zero or less: no fresh scans at all.
	ScansPerHour int
	// MaxClients bounds the clients each limit tracks at once.
	MaxClients int
	// Now is the clock; nil: time.Now.
	Now    func() time.Time
	Logger *slog.Logger // nil: slog.Default()

	// Log is the label log the answers read. Required.
	Log Log
	// Targets are the targets the crawl keeps; nil answers every check 503
	// (a node without crawl state).
	Targets Targets
	// Reports counts contributions; nil: nothing is counted.
	Reports ClientReports
	// Patterns is the pattern set of a fresh scan; nil: no patternScan.
	Patterns *scan.PatternSet
	// View is the peer view; nil: no observers or agreement members.
	View PeerView
}

// Checker answers checks. Its limiters, scan slot and scan cache live as
// long as it does.
type Checker struct {
	key      ed25519.PrivateKey
	did      string
	base     string // PublicURL, "" for relative links
	log      Log
	targets  Targets
	reports  ClientReports
	patterns *scan.PatternSet
	view     PeerView // nil: no peer view
	limits   scan.Limits
	trusted  []netip.Prefix
	now      func() time.Time
	logger   *slog.Logger

	checks      *ratelimit.Limiter[httpx.ClientKey] // nil: no limit
	scans       *ratelimit.Limiter[httpx.ClientKey] // nil: no fresh scans at all
	contributed *ratelimit.Limiter[reportKey]
	// contributors bounds the targets one client may count for a day, so a
	// few addresses cannot fill the contributed table (whose overflow is
	// shared) and so switch contributions off for everyone.
	contributors *ratelimit.Limiter[httpx.ClientKey]
	slot         chan struct{} // one fresh scan at a time for the whole node
	cache        *scanCache
}

// reportKey limits contributions to one per client, target and day, so one
// caller cannot mint any number of "clients" in the public count.
type reportKey struct {
	client httpx.ClientKey
	target string
}

// New builds a Checker from cfg.
func New(cfg Config) (*Checker, error) {
	if cfg.Log == nil {
		return nil, fmt.Errorf("making the checker: no log")
	}
	c := &Checker{
		key: cfg.Key, did: cfg.DID, base: strings.TrimSuffix(cfg.PublicURL, "/"), log: cfg.Log,
		targets: cfg.Targets, reports: cfg.Reports, patterns: cfg.Patterns, view: cfg.View,
		limits: scan.DefaultLimits, trusted: cfg.TrustedProxies, now: cfg.Now, logger: cfg.Logger,
		slot: make(chan struct{}, 1), cache: newScanCache(maxCachedScanBytes),
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if err := c.makeLimiters(cfg); err != nil {
		return nil, fmt.Errorf("making the checker: %w", err)
	}
	return c, nil
}

// makeLimiters makes the per-client limiters cfg asks for.
func (c *Checker) makeLimiters(cfg Config) error {
	var err error
	limit := func(n int, w time.Duration) ratelimit.Config {
		return ratelimit.Config{Events: n, Window: w, MaxKeys: cfg.MaxClients}
	}
	if cfg.ChecksPerMinute > 0 {
		if c.checks, err = ratelimit.New[httpx.ClientKey](limit(cfg.ChecksPerMinute, time.Minute)); err != nil {
			return fmt.Errorf("making check limiter: %w", err)
		}
	}
	if cfg.ScansPerHour > 0 {
		if c.scans, err = ratelimit.New[httpx.ClientKey](limit(cfg.ScansPerHour, time.Hour)); err != nil {
			return fmt.Errorf("making scan limiter: %w", err)
		}
	}
	if c.contributed, err = ratelimit.New[reportKey](limit(1, 24*time.Hour)); err != nil {
		return fmt.Errorf("making contribution limiter: %w", err)
	}
	if c.contributors, err = ratelimit.New[httpx.ClientKey](limit(ContributionsPerClientDay, 24*time.Hour)); err != nil {
		return fmt.Errorf("making contributor limiter: %w", err)
	}
	return nil
}

// Available reports whether c can answer: false for a nil Checker and for
// one without targets (a node without crawl state).
func (c *Checker) Available() bool { return c != nil && c.targets != nil }

// TrustedProxies are the peers whose X-Forwarded-For names the client;
// nil for a nil Checker.
func (c *Checker) TrustedProxies() []netip.Prefix {
	if c == nil {
		return nil
	}
	return c.trusted
}

// Allow counts one check against client's limit, if there is one, and
// says whether it is within it and, if not, how long until it is.
func (c *Checker) Allow(client httpx.ClientKey) (bool, time.Duration) {
	if c.checks == nil {
		return true, 0
	}
	return c.checks.Allow(client)
}
