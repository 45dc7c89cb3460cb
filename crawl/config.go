package crawl

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/crawl/guard"
	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/log/canon"
)

// Defaults of Config.
const (
	DefaultWorkers       = 12
	DefaultPerHost       = 2
	DefaultContinuityGap = 20 * time.Hour
	DefaultDeadline      = mcpclient.DefaultDeadline
	DefaultBatch         = 256
)

// Config is everything one crawl needs. Zero fields take the defaults named
// on them; New validates it once.
type Config struct {
	// Registry is the base URL of the MCP registry to harvest. Default the
	// official registry, https://registry.modelcontextprotocol.io.
	Registry string
	// RegistryClient fetches registry pages. The registry is the operator's
	// choice, not third-party data, so it does not go through the address
	// guard. Default a client with a 2-minute timeout.
	RegistryClient *http.Client
	// RegistryOptions bound the harvest (pages, bytes, retries); the crawl
	// fills in its User-Agent and opt-out list.
	RegistryOptions registry.Options
	// Curated, when set, adds its targets the registry does not list (in
	// histor's own registry namespace); nil observes the registry only.
	Curated *registry.Curated
	// Workers is how many observations run at once. Default 12 (HISTOR's).
	Workers int
	// PerHost is the most connections to one host name at any moment.
	// Default 2, and at least 2: a legacy HTTP+SSE observation holds two (its
	// event stream and its POSTs). The guard enforces it, and the scheduler
	// never hands a worker a target whose host is already at the bound.
	PerHost int
	// ContinuityGap is the least time between two links of a target's label
	// chain. Default 20h, which is also the least allowed: MTL/1 continuity
	// compares observations at least 20 hours apart.
	ContinuityGap time.Duration
	// AllowPrivateTargets also permits http:// and loopback or private
	// addresses. For tests and local demos only; New logs it loudly.
	AllowPrivateTargets bool
	// OptOutFile lists hosts and endpoints never to dial (see
	// registry.LoadOptOut). Optional.
	OptOutFile string
	// PatternSetFile and ThreatRecordsFile replace the pattern set and threat
	// record set shipped with histor (configs/pattern-set.json and
	// configs/threat-records.json, embedded in crawl/scan). Optional.
	PatternSetFile    string
	ThreatRecordsFile string
	// PublicURL and Version name the crawler in its User-Agent:
	// histor/<Version> (+<PublicURL>; read-only: initialize + tools/list).
	PublicURL string
	Version   string
	// Deadline bounds one whole observation. Default 60s.
	Deadline time.Duration
	// Client bounds (bytes, tools, pages, event size, depth); zero takes
	// crawl/mcpclient's defaults. MaxToolSetBytes and MaxJSONDepth may not
	// exceed what MTL/1 digesting accepts (canon.DefaultLimits: 4 MiB, 64).
	MaxResponseBytes int64
	MaxToolSetBytes  int64
	MaxTools         int
	MaxPages         int
	MaxSSEEventBytes int
	MaxJSONDepth     int
	// MaxResponseHeaderBytes bounds one response's header, which is read
	// whole before any body bound applies; past it an observation ends as
	// "too-large". Zero takes guard.DefaultMaxResponseHeaderBytes (64 KiB).
	MaxResponseHeaderBytes int64
	// ScanLimits bound the pattern scan (bytes per text, per tool and in all,
	// matches); a scan stopped by one yields an inconclusive label with
	// reason HISTOR-SCAN-001. Zero takes scan.DefaultLimits.
	ScanLimits scan.Limits
	// Batch is the most observations whose labels go into one log append.
	// Default 256.
	Batch int
	// Guard overrides parts of the address guard's configuration; tests set
	// Resolver and RootCAs. AllowPrivate, MaxConnsPerHost,
	// MaxResponseHeaderBytes, UserAgent and Logger are always taken from the
	// fields above.
	Guard guard.Config
	// Now is the clock; default time.Now. Tests move it forward by days.
	Now func() time.Time
	// Progress receives the live progress display; nil means none.
	Progress *Progress
	// Registerer receives the crawl's metrics (histor_crawl_*: targets by
	// status, crawl duration, labels issued by method, changes, crawls run).
	// nil registers none; never the global registry.
	Registerer prometheus.Registerer
	// Logger receives the crawl's logs; nil discards them (never the
	// process-wide default: the caller decides where logs go).
	Logger *slog.Logger
}

// Validate fills in defaults and checks the result; New calls it.
func (c *Config) Validate() error {
	if c.Registry == "" {
		c.Registry = registry.DefaultBase
	}
	u, err := url.Parse(c.Registry)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("crawl config: registry %q is not an absolute http(s) URL", c.Registry)
	}
	if u.Scheme == "http" && !c.AllowPrivateTargets {
		return errors.New("crawl config: a cleartext registry URL needs AllowPrivateTargets")
	}
	setDefault(&c.Workers, DefaultWorkers)
	setDefault(&c.PerHost, DefaultPerHost)
	setDefault(&c.Batch, DefaultBatch)
	if c.ContinuityGap == 0 {
		c.ContinuityGap = DefaultContinuityGap
	}
	if c.Deadline == 0 {
		c.Deadline = DefaultDeadline
	}
	if c.ScanLimits == (scan.Limits{}) {
		c.ScanLimits = scan.DefaultLimits
	}
	if c.Workers < 1 || c.Batch < 1 || c.Deadline < 0 {
		return errors.New("crawl config: workers, batch and deadline must be positive")
	}
	if err := c.checkBounds(); err != nil {
		return err
	}
	if c.PerHost < 2 {
		return fmt.Errorf("crawl config: per-host %d: a legacy SSE observation needs 2 connections to one host", c.PerHost)
	}
	if c.ContinuityGap < DefaultContinuityGap {
		return fmt.Errorf("crawl config: continuity gap %v is under MTL/1's %v", c.ContinuityGap, DefaultContinuityGap)
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.PublicURL == "" {
		c.PublicURL = "https://github.com/histor-observer/histor"
	}
	if c.RegistryClient == nil {
		c.RegistryClient = &http.Client{Timeout: 2 * time.Minute}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// checkBounds refuses negative bounds, and client bounds beyond what the
// digest can take: a tool set the client accepted but MTL/1 refused would
// be fetched only to be thrown away.
func (c *Config) checkBounds() error {
	for name, v := range map[string]int64{
		"MaxResponseBytes": c.MaxResponseBytes, "MaxToolSetBytes": c.MaxToolSetBytes,
		"MaxTools": int64(c.MaxTools), "MaxPages": int64(c.MaxPages),
		"MaxSSEEventBytes": int64(c.MaxSSEEventBytes), "MaxJSONDepth": int64(c.MaxJSONDepth),
		"MaxResponseHeaderBytes":   c.MaxResponseHeaderBytes,
		"RegistryOptions.MaxPages": int64(c.RegistryOptions.MaxPages), "RegistryOptions.MaxPageBytes": c.RegistryOptions.MaxPageBytes,
		"RegistryOptions.MaxServers": int64(c.RegistryOptions.MaxServers),
	} {
		if v < 0 {
			return fmt.Errorf("crawl config: %s must not be negative", name)
		}
	}
	if c.MaxToolSetBytes > int64(canon.DefaultLimits.MaxBytes) {
		return fmt.Errorf("crawl config: MaxToolSetBytes %d is over the %d bytes MTL/1 digesting accepts", c.MaxToolSetBytes, canon.DefaultLimits.MaxBytes)
	}
	if c.MaxJSONDepth > canon.DefaultLimits.MaxDepth {
		return fmt.Errorf("crawl config: MaxJSONDepth %d is over the depth %d MTL/1 digesting accepts", c.MaxJSONDepth, canon.DefaultLimits.MaxDepth)
	}
	return nil
}

func setDefault(v *int, d int) {
	if *v == 0 {
		*v = d
	}
}

// registryURN is the descriptor's server.registry for a registry base URL:
// HISTOR's URN for the official registry, the same form over the host for
// any other, so two registries' subjects never collide.
func registryURN(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "urn:awr:mtl:1:registry:" + base
	}
	return "urn:awr:mtl:1:registry:" + u.Host
}
