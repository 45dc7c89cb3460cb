package node

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/histor-observer/histor/crawl/scan"
)

// Config is everything a node needs. Zero fields take the defaults named
// below; Validate fills them in and checks the result once, at start-up.
type Config struct {
	// DataDir holds the node's state: the seed (unless SeedFile says
	// otherwise) and the log in DataDir/log. Required.
	DataDir string

	// HTTPAddr is the address the API listens on. Default "127.0.0.1:8080";
	// use ":8080" to serve on every interface.
	HTTPAddr string

	// LogOrigin names the log: the C2SP checkpoint origin line and the
	// signed-note key name of its heads. It should be the URL prefix under
	// which /log/ is served, without scheme or trailing slash, e.g.
	// "observer.example.org/log". No spaces, no "+". Default "histor.local/log".
	// Never change it once the log has heads: clients pin it.
	LogOrigin string

	// WitnessName is the key name of this node's cosignature/v1 witness key.
	// Default: LogOrigin with a final "/log" replaced by "/witness".
	WitnessName string

	// SeedFile is the node's 32-byte secret seed, from which the log,
	// witness and libp2p keys are derived. Default DataDir/seed. When the file
	// does not exist it is generated, mode 0600; an existing file that
	// group or others can read is refused.
	SeedFile string

	// PublicURL is the absolute http(s) URL this node is reachable at,
	// e.g. "https://observer.example.org". Optional; when set it is
	// announced by /api/v1/issuer.
	PublicURL string

	// MaxEntries is the most leaves one /api/v1/log/entries answer holds,
	// 1..1000. Default 1000 (HISTOR's bound).
	MaxEntries int

	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout bound one
	// HTTP connection. Defaults 5s, 10s, 30s and 120s.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration

	// ShutdownTimeout is how long Run lets requests in flight finish once its
	// context is done. Default 10s.
	ShutdownTimeout time.Duration

	// MaxHeaderBytes bounds a request's header. Default 16 KiB.
	MaxHeaderBytes int

	// MaxInFlight is the most requests the API works on at once, 1..65536;
	// one more is answered 503 with Retry-After at once rather than queued.
	// Default 64.
	MaxInFlight int

	// CacheBytes is the log's Pebble block cache. Default 64 MiB, which
	// keeps the tiles of a ten-million-leaf tree's upper levels hot and a
	// serving node near 100 MiB resident.
	CacheBytes int64

	// Logger receives the node's structured logs. Default: discarded.
	Logger *slog.Logger

	// Now is the clock for head timestamps. Default time.Now; tests set it.
	Now func() time.Time

	// CrawlStatus reports the crawler's state for /health: whether a crawl
	// is running and the error the last one ended with ("" for none).
	// Optional; nil reports no crawl running and no error.
	CrawlStatus func() (running bool, lastError string)

	// POST /api/v1/check. Limits count per client: an IPv4 address or an
	// IPv6 /64, as TrustedProxies decides it.

	// CheckTargets is what /check looks targets up in (StateTargets reads
	// the crawl's state). Optional; without it /check answers 503.
	CheckTargets CheckTargets
	// ClientReports keeps the (target, digest, day) counts of contribute:
	// true (*state.Store does). Optional; without it nothing is counted and
	// answers carry no "contributed".
	ClientReports ClientReports
	// PatternSet is the pattern set /check scans tool sets with; it should
	// be the crawl's. Optional; without it answers carry no patternScan.
	PatternSet *scan.PatternSet
	// ChecksPerMinute is the most checks one client may make in any minute;
	// one more is answered 429 with Retry-After. At most 2^20; default 30;
	// negative: no limit (for benchmarks, or behind a proxy that limits).
	ChecksPerMinute int
	// ScansPerHour is the most fresh pattern scans (of a set not scanned
	// before) one client's checks may start in any hour; beyond it a check
	// is still answered, with patternScan "not-scanned". At most 2^20;
	// default 20; negative: no fresh scans at all.
	ScansPerHour int
	// MaxCheckClients bounds the clients each /check limit tracks at once,
	// 1..2^22. While every tracked client has checked within the limit's
	// window, new clients share one bucket with the same limit, so a spray
	// of addresses neither grows memory nor frees anyone of a limit. About
	// 8 bytes per counted event and 150 per client. Default 50,000.
	MaxCheckClients int
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client: from such a peer the rightmost hop outside these prefixes
	// is the client. Default none: the connection's peer is the client.
	TrustedProxies []netip.Prefix
}

// Bounds and defaults of Config.
const (
	DefaultHTTPAddr    = "127.0.0.1:8080"
	DefaultLogOrigin   = "histor.local/log"
	DefaultMaxEntries  = 1000
	MaxMaxEntries      = 1000
	DefaultCacheBytes  = 64 << 20
	DefaultMaxInFlight = 64
	MaxMaxInFlight     = 1 << 16
	defaultHeaderMax   = 16 << 10

	DefaultChecksPerMinute = 30
	DefaultScansPerHour    = 20
	DefaultMaxCheckClients = 50_000
	maxCheckRate           = 1 << 20
	maxCheckClients        = 1 << 22
)

// Validate fills in defaults and reports the first field that is wrong.
func (c *Config) Validate() error {
	c.applyDefaults()
	if c.DataDir == "" {
		return errors.New("config: DataDir is required")
	}
	if err := checkKeyName("LogOrigin", c.LogOrigin); err != nil {
		return err
	}
	if err := checkKeyName("WitnessName", c.WitnessName); err != nil {
		return err
	}
	if c.WitnessName == c.LogOrigin {
		return errors.New("config: WitnessName must differ from LogOrigin")
	}
	if c.MaxEntries < 1 || c.MaxEntries > MaxMaxEntries {
		return fmt.Errorf("config: MaxEntries %d is outside 1..%d", c.MaxEntries, MaxMaxEntries)
	}
	if err := c.checkLimits(); err != nil {
		return err
	}
	if err := c.checkCheckLimits(); err != nil {
		return err
	}
	return checkPublicURL(c.PublicURL)
}

func (c *Config) applyDefaults() {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if c.LogOrigin == "" {
		c.LogOrigin = DefaultLogOrigin
	}
	if c.WitnessName == "" {
		c.WitnessName = strings.TrimSuffix(c.LogOrigin, "/log") + "/witness"
	}
	if c.SeedFile == "" && c.DataDir != "" {
		c.SeedFile = filepath.Join(c.DataDir, "seed")
	}
	if c.MaxEntries == 0 {
		c.MaxEntries = DefaultMaxEntries
	}
	def(&c.ReadHeaderTimeout, 5*time.Second)
	def(&c.ReadTimeout, 10*time.Second)
	def(&c.WriteTimeout, 30*time.Second)
	def(&c.IdleTimeout, 120*time.Second)
	def(&c.ShutdownTimeout, 10*time.Second)
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = defaultHeaderMax
	}
	if c.CacheBytes == 0 {
		c.CacheBytes = DefaultCacheBytes
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.applyCheckDefaults()
}

func (c *Config) applyCheckDefaults() {
	if c.ChecksPerMinute == 0 {
		c.ChecksPerMinute = DefaultChecksPerMinute
	}
	if c.ScansPerHour == 0 {
		c.ScansPerHour = DefaultScansPerHour
	}
	if c.MaxCheckClients == 0 {
		c.MaxCheckClients = DefaultMaxCheckClients
	}
}

func (c *Config) checkCheckLimits() error {
	if c.ChecksPerMinute > maxCheckRate {
		return fmt.Errorf("config: ChecksPerMinute %d is over %d", c.ChecksPerMinute, maxCheckRate)
	}
	if c.ScansPerHour > maxCheckRate {
		return fmt.Errorf("config: ScansPerHour %d is over %d", c.ScansPerHour, maxCheckRate)
	}
	if c.MaxCheckClients < 1 || c.MaxCheckClients > maxCheckClients {
		return fmt.Errorf("config: MaxCheckClients %d is outside 1..%d", c.MaxCheckClients, maxCheckClients)
	}
	for _, p := range c.TrustedProxies {
		if !p.IsValid() {
			return errors.New("config: TrustedProxies holds an invalid prefix")
		}
	}
	return nil
}

func (c *Config) checkLimits() error {
	for name, d := range map[string]time.Duration{
		"ReadHeaderTimeout": c.ReadHeaderTimeout, "ReadTimeout": c.ReadTimeout,
		"WriteTimeout": c.WriteTimeout, "IdleTimeout": c.IdleTimeout, "ShutdownTimeout": c.ShutdownTimeout,
	} {
		if d < 0 {
			return fmt.Errorf("config: %s must not be negative", name)
		}
	}
	if c.MaxHeaderBytes < 1024 || c.MaxHeaderBytes > 1<<20 {
		return fmt.Errorf("config: MaxHeaderBytes %d is outside 1 KiB..1 MiB", c.MaxHeaderBytes)
	}
	if c.CacheBytes < 0 {
		return errors.New("config: CacheBytes must not be negative")
	}
	if c.MaxInFlight < 1 || c.MaxInFlight > MaxMaxInFlight {
		return fmt.Errorf("config: MaxInFlight %d is outside 1..%d", c.MaxInFlight, MaxMaxInFlight)
	}
	return nil
}

// checkKeyName applies the signed-note key-name rules: non-empty, printable
// UTF-8, no spaces and no "+".
func checkKeyName(field, name string) error {
	ok := name != "" && utf8.ValidString(name) && !strings.ContainsAny(name, "+ ")
	for _, r := range name {
		ok = ok && unicode.IsPrint(r)
	}
	if !ok {
		return fmt.Errorf("config: %s %q is not a valid signed-note key name (non-empty, printable, no spaces, no \"+\")", field, name)
	}
	return nil
}

func checkPublicURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("config: PublicURL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("config: PublicURL %q must be an absolute http(s) URL without user, query or fragment", s)
	}
	return nil
}
