// Package mcpclient is histor's own read-only MCP client: it asks a remote MCP
// server for its tool list and keeps exactly the bytes the server sent, so the
// tool-set digest is of what the server said and not of what an SDK decoded.
//
// It speaks the modern protocol (2026-07-28: server/discover, per-request
// _meta, MCP-Protocol-Version and Mcp-Method headers) and falls back to the
// handshake-era lifecycle (initialize, notifications/initialized, tools/list)
// over streamable HTTP, and observes legacy HTTP+SSE remotes. The only methods
// it can send are the literals in this package; it never calls a tool.
//
// Every observation runs under one deadline and explicit byte, tool, page,
// event and depth bounds; whatever a server does ends as an Observation
// status, never as an error or a panic out of Observe.
package mcpclient

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// Statuses an Observation can end in (HISTOR's names). A status from
// Config.Classify (such as blocked-address) may also appear.
const (
	StatusOK        = "ok"
	StatusRedirect  = "http-3xx"
	StatusTimeout   = "timeout"
	StatusConnect   = "connect"
	StatusNetwork   = "network"
	StatusProtocol  = "protocol"
	StatusTooLarge  = "too-large"
	StatusPartial   = "partial"
	StatusClientErr = "client-error"
)

// Eras of the protocol an observation was made in.
const (
	EraModern           = "modern"
	EraLegacyStreamable = "legacy-streamable"
	EraLegacySSE        = "legacy-sse"
)

// Protocol versions this client asks for.
const (
	ModernVersion = "2026-07-28"
	LegacyVersion = "2025-06-18" // what HISTOR sends in initialize
)

// Transport is a registry remote type.
type Transport string

// Registry remote types.
const (
	StreamableHTTP Transport = "streamable-http"
	SSE            Transport = "sse"
)

// Config holds the client's bounds and collaborators. Zero fields take the
// defaults named on them.
type Config struct {
	// HTTP sends every request. In production it comes from crawl/guard (no
	// redirects, dials only checked addresses); the client also refuses to
	// follow redirects itself, whatever HTTP's CheckRedirect says.
	HTTP *http.Client
	// UserAgent names the crawler to the server (default "histor/<ClientVersion> (read-only: initialize + tools/list)").
	UserAgent string
	// ClientVersion is clientInfo.version (default "dev"). clientInfo.name is always "histor".
	ClientVersion string
	// Deadline bounds one whole observation, every request and page (default 60s).
	Deadline time.Duration
	// MaxResponseBytes bounds one response body after decompression (default 4 MiB).
	MaxResponseBytes int64
	// MaxToolSetBytes bounds every tools/list response of one observation together (default 3 MiB).
	MaxToolSetBytes int64
	// MaxTools bounds the tools of one observation (default 5000).
	MaxTools int
	// MaxPages bounds tools/list pages (default 50); a repeated cursor also stops the listing.
	MaxPages int
	// MaxSSEEventBytes bounds one server-sent event, lines and data together (default 4 MiB,
	// HISTOR's bound: a whole tools/list page often arrives as one event, and real tool sets reach 1.5 MB).
	MaxSSEEventBytes int
	// MaxJSONDepth bounds JSON nesting of one message (default 64).
	MaxJSONDepth int
	// Classify maps a transport error to a status before the client's own
	// mapping, so a guard's refusal (blocked-address) keeps its name without
	// this package importing the guard.
	Classify func(error) (status string, ok bool)
	// Logger receives debug lines about each observation; nil discards them
	// (never the process-wide default: the caller decides where logs go).
	Logger *slog.Logger
}

// Defaults of Config's bounds.
const (
	DefaultDeadline         = 60 * time.Second
	DefaultMaxResponseBytes = 4 << 20
	DefaultMaxToolSetBytes  = 3 << 20
	DefaultMaxTools         = 5000
	DefaultMaxPages         = 50
	DefaultMaxSSEEventBytes = 4 << 20
	DefaultMaxJSONDepth     = 64
)

// Client observes MCP servers. It is safe for concurrent use.
type Client struct {
	cfg  Config
	http *http.Client
}

// New returns a Client with cfg's zero fields defaulted.
func New(cfg Config) *Client {
	cfg = withDefaults(cfg)
	hc := *cfg.HTTP
	// A redirect is an answer about the endpoint the registry named, not an
	// invitation to observe another one.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{cfg: cfg, http: &hc}
}

func withDefaults(cfg Config) Config {
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{}
	}
	if cfg.ClientVersion == "" {
		cfg.ClientVersion = "dev"
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "histor/" + cfg.ClientVersion + " (read-only: initialize + tools/list)"
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = DefaultDeadline
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.MaxToolSetBytes <= 0 {
		cfg.MaxToolSetBytes = DefaultMaxToolSetBytes
	}
	if cfg.MaxTools <= 0 {
		cfg.MaxTools = DefaultMaxTools
	}
	if cfg.MaxPages <= 0 {
		cfg.MaxPages = DefaultMaxPages
	}
	if cfg.MaxSSEEventBytes <= 0 {
		cfg.MaxSSEEventBytes = DefaultMaxSSEEventBytes
	}
	if cfg.MaxJSONDepth <= 0 {
		cfg.MaxJSONDepth = DefaultMaxJSONDepth
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg
}

// Observation is what one observation of one endpoint produced.
type Observation struct {
	Status          string // see the Status* constants; "ok" means a fully drained tool list
	Detail          string // short human reason for a status other than ok
	Era             string // EraModern, EraLegacyStreamable or EraLegacySSE; "" if none was reached
	ProtocolVersion string // negotiated version (at most 40 bytes)
	// ServerInfo is serverInfo as sent (strictly parsed; a number canon
	// refuses stays a canon.RefusedNumber). Instructions is nil if none.
	ServerInfo   map[string]any
	Instructions *string
	// Tools are the tools exactly as sent, parsed strictly by log/canon with
	// refused numbers kept as canon.RefusedNumber (so log/mtl can report
	// MTL-NUM-001). Nil unless Status is ok.
	Tools          []any
	Pages          int
	Started, Ended time.Time
}

// Observe reads endpoint's tool list over transport t. It never returns an
// error: every outcome is an Observation status.
func (c *Client) Observe(ctx context.Context, endpoint string, t Transport) *Observation {
	obs := &Observation{Started: time.Now()}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Deadline)
	defer cancel()
	err := c.observe(ctx, endpoint, t, obs)
	if err != nil {
		obs.Status, obs.Detail = c.classify(ctx, err)
		obs.Detail = ClipDetail(obs.Detail)
		obs.Tools = nil
	} else {
		obs.Status = StatusOK
	}
	obs.Ended = time.Now()
	c.cfg.Logger.Debug("mcp observation", "endpoint", endpoint, "transport", string(t),
		"status", obs.Status, "detail", obs.Detail, "era", obs.Era, "pages", obs.Pages,
		"elapsed", obs.Ended.Sub(obs.Started))
	return obs
}

func (c *Client) observe(ctx context.Context, endpoint string, t Transport, obs *Observation) error {
	switch t {
	case SSE:
		return c.observeSSE(ctx, endpoint, obs)
	case StreamableHTTP, "":
		return c.observeStreamable(ctx, endpoint, obs)
	default:
		return stopf(StatusClientErr, "transport %q is not observed", string(t))
	}
}

// observeStreamable tries the modern protocol and falls back to the legacy
// lifecycle when the server does not speak it.
func (c *Client) observeStreamable(ctx context.Context, endpoint string, obs *Observation) error {
	err := c.observeModern(ctx, endpoint, obs)
	if !isFallback(err) {
		return err
	}
	c.cfg.Logger.Debug("mcp modern attempt declined; legacy lifecycle", "endpoint", endpoint, "reason", err)
	*obs = Observation{Started: obs.Started}
	conn := &streamConn{c: c, endpoint: endpoint}
	defer conn.close(ctx)
	return c.legacy(ctx, conn, EraLegacyStreamable, obs)
}
