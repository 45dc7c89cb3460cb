package node

import (
	"crypto/x509"
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

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/node/check"
	"github.com/histor-observer/histor/node/federation"
	"github.com/histor-observer/histor/node/receipts"
	"github.com/histor-observer/histor/node/webhook"
)

// Config is everything a node needs. Zero fields take the defaults named
// below; Validate fills them in and checks the result once, at start-up.
type Config struct {
	// DataDir holds the node's state: the seed (unless SeedFile says
	// otherwise), the log in DataDir/log and the crawl state in
	// DataDir/state. Required.
	DataDir string

	// HTTPAddr is the address the API listens on. Default "127.0.0.1:8080";
	// use ":8080" to serve on every interface.
	HTTPAddr string

	// ObserveOwnFace makes every crawl observe the node's own MCP face at
	// /mcp on the address it serves on, like any other server, so its tool
	// definitions are in its own log (under histor's own registry URN).
	ObserveOwnFace bool

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

	// LingerBytes and LingerTimeout bound the reading and discarding of what
	// an answer left unread of a request body (a /check body beyond its 2 MiB,
	// say), so that a client that writes its whole body before it reads meets
	// the answer, not a reset: at most LingerBytes (0..1 GiB) more, for at
	// most LingerTimeout. Defaults 16 MiB and 5s.
	LingerBytes   int64
	LingerTimeout time.Duration

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

	// Now is the node's clock: it dates heads, /check answers (checkedAt)
	// and the client reports they count, and the start of each crawl; it
	// times the crawl schedule's waits and the reading API's windows (the
	// change counts of /api/v1/stats, badge ages). Labels take Crawl.Now;
	// rate limits count real time. Default time.Now; tests set it.
	Now func() time.Time

	// Registry receives the node's metrics while it is open (Open registers
	// them, Close unregisters them) and is what GET /metrics serves: its
	// HTTP API's, its log's and its crawler's series, each with the constant
	// label origin=LogOrigin, and the Go runtime and process collectors,
	// which are the process's and registered once. So nodes of different
	// logs may share one Registry, their series told apart by origin; two
	// open nodes of the same LogOrigin may not (the second Open is refused).
	// Default: a registry of the node's own; never the global one.
	Registry *prometheus.Registry

	// Profile is "dev" (the default) or "prod", with HISTOR's meaning: a
	// "prod" node fails closed, refusing to start without an OperatorToken of
	// at least 24 characters and an https PublicURL, or with
	// Crawl.AllowPrivateTargets. /health reports it.
	Profile string

	// OperatorToken guards the operator's routes (POST /api/v1/admin/crawl):
	// a request must carry it in the x-histor-operator header. Empty, those
	// routes answer 503. Give it through the environment
	// (HISTOR_OPERATOR_TOKEN) or a file rather than on a command line, which
	// every local user can read.
	OperatorToken string

	// Crawl configures the crawler the node runs over its log: registry,
	// workers, bounds, pattern and record sets, opt-out list (crawl.Config
	// documents each). The node sets its Logger to the node's own, its
	// Registerer to Registry with the node's origin label, and its PublicURL
	// and Version when they are empty; crawl state lives in DataDir/state.
	Crawl crawl.Config

	// CrawlInterval is how often a serving node crawls, in the background,
	// counted as HISTOR counts it: the next crawl starts CrawlInterval (±10%
	// jitter, so a fleet restarted together does not crawl in lockstep)
	// after the newest recorded crawl started, at once when none is recorded
	// or that time has passed, so a restart does not crawl again at once. A
	// crawl that failed (or was cut short by a stop) is retried min(interval,
	// 1h) after it ended. 0, the default, never crawls on a schedule; the
	// operator can still start a crawl (POST /api/v1/admin/crawl), and
	// "histor crawl" runs one.
	CrawlInterval time.Duration

	// POST /api/v1/check. Limits count per client: an IPv4 address or an
	// IPv6 /64, as TrustedProxies decides it.

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
	// ReceiptIssuers are the did:keys (Ed25519) of the AIMarket hubs whose
	// signed receipt anchors POST /api/v1/receipts/anchors logs, as HISTOR's
	// HISTOR_RECEIPT_ISSUERS. None, the default: the receipts log is served
	// but takes no anchors (503).
	ReceiptIssuers []string

	// Federation: gossip with peers, the witness and the witnesses this
	// node's checkpoints go to (docs/operations.md, "Federation").

	// P2PListen are the multiaddrs the libp2p host listens on, TCP
	// ("/ip4/0.0.0.0/tcp/4001") and QUIC ("/ip4/0.0.0.0/udp/4001/quic-v1")
	// only. None, the default, runs no gossip host (and Peers must be empty).
	P2PListen []string
	// Peers are the federation peers, each either the path of the peer's
	// signed observer descriptor (the file DataDir/observer.descriptor it
	// writes at start) or "did:key:…=<multiaddr ending in /p2p/<peer ID>>".
	// Every peer's did:key joins AllowList and its log is witnessed. A peer
	// given by descriptor is also a witness for this node: each new
	// checkpoint is sent to it over gossip's add-checkpoint protocol, and its
	// cosignature is served at /log/checkpoint. One given by did:key is
	// witnessed from its first head on, but not submitted to (its witness key
	// is only in its descriptor); list it in Witnesses to submit to it.
	Peers []string
	// AllowList are the did:keys of further observers whose heads,
	// observations and evidence count when they reach this node through a
	// peer. This node's own and its peers' are always on it.
	AllowList []string
	// MembersFile names a file of further members, one per line ("#" starts
	// a comment): a peer as Peers takes it (a descriptor file's path,
	// relative to the members file's folder, or "did:key:…=<multiaddr>"),
	// or a did:key alone, an observer as AllowList takes it. It is read at
	// start and again by ReloadMembers (SIGHUP for histor serve), so a
	// federation grows and shrinks without restarts. At most
	// MaxMembersFileBytes.
	MembersFile string
	// WitnessLogs are further logs this node's witness cosigns, each
	// "ORIGIN=VKEY": the log's checkpoint origin and its signed-note verifier
	// key (whose key name must be ORIGIN).
	WitnessLogs []string
	// Witnesses are external witnesses each new checkpoint is submitted to,
	// each "URL=VKEY": the witness's C2SP submission prefix (the node posts to
	// URL/add-checkpoint) and its cosignature/v1 verifier key.
	Witnesses []string
	// WitnessPolicy is a c2sp.org/tlog-policy file saying when a checkpoint of
	// this log counts as witnessed (the histor_federation_witnessed_size
	// metric and the log line "checkpoint witnessed"). Default: this log, every
	// witness it submits to (Witnesses and descriptor peers), and a quorum of
	// any one of them; none at all without witnesses.
	WitnessPolicy string
	// GossipHeartbeat is GossipSub's heartbeat. Default 1s; tests shorten it.
	GossipHeartbeat time.Duration
	// MirrorPoll is how often the node asks every observer it counts (and the peers that
	// mirror it) for a newer checkpoint, beside the heads gossip announces: a node that
	// missed every announcement converges within one poll. Default 5s.
	MirrorPoll time.Duration
	// MirrorMaxLeaves bounds the log of one observer the node mirrors (default
	// mirror.DefaultMaxLeaves); MirrorMaxBundleBytes one entry bundle a source serves
	// (default mirror.DefaultMaxBundleBytes).
	MirrorMaxLeaves      uint64
	MirrorMaxBundleBytes int
	// MirrorURLs also reads each descriptor peer's log from the https URL its descriptor
	// names, after the peer itself and the peers that mirror it over libp2p.
	MirrorURLs bool

	// Notifications (docs/operations.md, "Security events and webhooks").

	// EventsInterval is how often the node turns newly recorded facts
	// (change records, split views, equivocation evidence) into security
	// events; a crawl also starts a pass when it ends. Default 30s.
	EventsInterval time.Duration
	// Webhooks are the operator's webhook subscriptions: https URLs only,
	// each with a secret of at least 32 characters (webhook.Subscription).
	// Every security event is POSTed to each, signed with HMAC-SHA256 as
	// HISTOR signs it. Give secrets through a file, never a command line.
	Webhooks []webhook.Subscription
	// WebhookRootCAs are the roots a webhook receiver's certificate must
	// chain to. Default (nil): the system's.
	WebhookRootCAs *x509.CertPool

	// fed is the federation settings parsed from the fields above by
	// Validate, so a descriptor file is read once, at start-up.
	fed *federation.Settings

	// Sandbox runs the package sandbox's queue, scheduler and results
	// handler (SandboxConfig documents each field); off unless Enabled.
	Sandbox SandboxConfig
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

	DefaultMaxHeaderBytes    = 16 << 10
	DefaultLingerBytes       = 16 << 20
	DefaultLingerTimeout     = 5 * time.Second
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 10 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultShutdownTimeout   = 10 * time.Second

	ProfileDev  = "dev"
	ProfileProd = "prod"
	// MinProdOperatorToken is the shortest operator token a "prod" node
	// accepts, as in HISTOR.
	MinProdOperatorToken   = 24
	DefaultChecksPerMinute = check.DefaultChecksPerMinute
	DefaultScansPerHour    = check.DefaultScansPerHour
	DefaultMaxCheckClients = check.DefaultMaxClients
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
	if err := checkPublicURL(c.PublicURL); err != nil {
		return err
	}
	if err := c.checkCrawl(); err != nil {
		return err
	}
	if err := c.checkCheckLimits(); err != nil {
		return err
	}
	if err := c.checkFederation(); err != nil {
		return err
	}
	if err := c.checkNotify(); err != nil {
		return err
	}
	if err := c.checkReceipts(); err != nil {
		return err
	}
	if err := c.checkSandbox(); err != nil {
		return err
	}
	return c.checkProfile()
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
	def(&c.MirrorPoll, DefaultMirrorPoll)
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
	def(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&c.ReadTimeout, DefaultReadTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	def(&c.ShutdownTimeout, DefaultShutdownTimeout)
	def(&c.LingerTimeout, DefaultLingerTimeout)
	if c.LingerBytes == 0 {
		c.LingerBytes = DefaultLingerBytes
	}
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
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
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.Profile == "" {
		c.Profile = ProfileDev
	}
	c.Crawl.Logger = c.Logger
	c.Crawl.Registerer = c.registerer()
	if c.Crawl.PublicURL == "" {
		c.Crawl.PublicURL = c.PublicURL
	}
	if c.Crawl.Version == "" {
		c.Crawl.Version = Version
	}
	c.applyCheckDefaults()
}

// registerer is where the node's own series go: Registry, with the
// constant label origin=LogOrigin, so that nodes of different logs never mix
// their figures in a shared Registry.
func (c *Config) registerer() prometheus.Registerer {
	return prometheus.WrapRegistererWith(prometheus.Labels{"origin": c.LogOrigin}, c.Registry)
}

// checkCrawl validates the crawler's settings (filling in their defaults)
// and the schedule.
func (c *Config) checkCrawl() error {
	if c.CrawlInterval < 0 {
		return errors.New("config: CrawlInterval must not be negative")
	}
	if err := c.Crawl.Validate(); err != nil {
		return fmt.Errorf("config: Crawl: %w", err)
	}
	return nil
}

// checkProfile applies what "prod" demands.
func (c *Config) checkProfile() error {
	switch c.Profile {
	case ProfileDev:
		return nil
	case ProfileProd:
	default:
		return fmt.Errorf("config: Profile %q: want %q or %q", c.Profile, ProfileDev, ProfileProd)
	}
	switch {
	case len(c.OperatorToken) < MinProdOperatorToken:
		return fmt.Errorf("config: profile prod needs an OperatorToken of at least %d characters", MinProdOperatorToken)
	case !strings.HasPrefix(c.PublicURL, "https://"):
		return errors.New("config: profile prod needs an https PublicURL")
	case c.Crawl.AllowPrivateTargets:
		return errors.New("config: profile prod refuses Crawl.AllowPrivateTargets")
	}
	return nil
}

func (c *Config) checkLimits() error {
	for name, d := range map[string]time.Duration{
		"ReadHeaderTimeout": c.ReadHeaderTimeout, "ReadTimeout": c.ReadTimeout,
		"WriteTimeout": c.WriteTimeout, "IdleTimeout": c.IdleTimeout, "ShutdownTimeout": c.ShutdownTimeout,
		"LingerTimeout": c.LingerTimeout,
	} {
		if d < 0 {
			return fmt.Errorf("config: %s must not be negative", name)
		}
	}
	if c.MaxHeaderBytes < 1024 || c.MaxHeaderBytes > 1<<20 {
		return fmt.Errorf("config: MaxHeaderBytes %d is outside 1 KiB..1 MiB", c.MaxHeaderBytes)
	}
	if c.LingerBytes < 0 || c.LingerBytes > 1<<30 {
		return fmt.Errorf("config: LingerBytes %d is outside 0..1 GiB", c.LingerBytes)
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

// checkReceipts validates ReceiptIssuers: did:keys, each once.
func (c *Config) checkReceipts() error {
	var ie *receipts.IssuerError
	switch err := receipts.CheckIssuers(c.ReceiptIssuers); {
	case errors.As(err, &ie) && ie.Twice:
		return fmt.Errorf("config: ReceiptIssuers lists %s twice", ie.DID)
	case errors.As(err, &ie):
		return fmt.Errorf("config: ReceiptIssuers[%d] is not an Ed25519 did:key: %w", ie.Index, ie.Err)
	case err != nil:
		return fmt.Errorf("config: ReceiptIssuers: %w", err)
	}
	return nil
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
