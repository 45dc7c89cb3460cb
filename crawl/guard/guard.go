// Package guard decides where the crawler may connect and is the only way it connects.
//
// Every URL the crawler dials comes from third-party data: a registry entry anyone can publish.
// Without a guard, one entry naming 127.0.0.1 or a cloud metadata address would turn the
// crawler into a way to POST JSON-RPC at its own host's services. So, following HISTOR's
// netguard:
//
//   - only https is dialled (Config.AllowPrivate, for tests and local demos, also allows http
//     and non-global addresses);
//   - no userinfo, no template variables, a valid IDNA host name, a real port;
//   - the name is resolved once per Check, and every answer must be a global unicast address
//     (IPv4-mapped and NAT64 forms judged by the IPv4 address inside): one private answer in a
//     round-robin set is enough to refuse;
//   - the client then dials only the address that was checked, with the name kept in the URL,
//     so the Host header and TLS SNI carry the name and the certificate is verified against it,
//     while a resolver that answers differently a moment later (DNS rebinding) is never asked;
//   - redirects are returned, never followed;
//   - at most Config.MaxConnsPerHost connections to one host name exist at any moment.
//
// Errors map to crawl statuses with Status: *BlockedError and *PolicyError are
// "blocked-address", ErrTemplatedURL is "templated-url", *ResolveError is "connect".
package guard

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is the guard's whole configuration; zero values take the documented defaults.
type Config struct {
	// AllowPrivate also permits http:// URLs and loopback, private and other non-global
	// addresses. For tests and local demos only; New logs a warning when it is set.
	AllowPrivate bool
	// MaxConnsPerHost bounds the connections (being dialled, in use or idle) to one host name
	// at any moment, across ports and schemes. Default 2. A further request waits for one to
	// be released, bounded by its context, and never opens another.
	MaxConnsPerHost int
	// Resolver answers host names. Default net.DefaultResolver.
	Resolver Resolver
	// DialTimeout bounds one TCP connect. Default 10s.
	DialTimeout time.Duration
	// LocalAddr, when valid, is the source address of every connection (port chosen by the
	// system), so observers sharing one host can dial from distinct addresses. Default: the
	// system's choice.
	LocalAddr netip.Addr
	// UserAgent is sent on every request, replacing any the caller set, so the crawler always
	// names itself. Build it with UserAgent; default DefaultUserAgent.
	UserAgent string
	// RootCAs verifies server certificates; nil means the system pool. Tests set it.
	RootCAs *x509.CertPool
	// MaxResponseHeaderBytes bounds the header of one response (status line and fields). A
	// server that sends more ends the request with a *HeaderTooLargeError ("too-large").
	// Default DefaultMaxResponseHeaderBytes.
	MaxResponseHeaderBytes int64
	// Logger receives the guard's few logs; nil discards them (never the
	// process-wide default: the caller decides where logs go).
	Logger *slog.Logger
}

// DefaultMaxResponseHeaderBytes is Config.MaxResponseHeaderBytes' default, 64 KiB: far above
// what an MCP server needs, far below net/http's own 10 MiB.
const DefaultMaxResponseHeaderBytes = 64 << 10

// Resolver is the part of *net.Resolver the guard uses, so tests can inject private answers
// and answers that change between lookups.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DefaultUserAgent is used when Config.UserAgent is empty.
var DefaultUserAgent = UserAgent("devel", "https://github.com/histor-observer/histor")

// UserAgent builds the crawler's User-Agent: it names the software, where to read about it,
// and what it does, so an operator who sees it in a log knows it only lists tools.
func UserAgent(version, publicURL string) string {
	return fmt.Sprintf("histor/%s (+%s; read-only: initialize + tools/list)", version, publicURL)
}

// Target is a URL the guard approved, with the address the client will dial for it.
type Target struct {
	URL  *url.URL       // the URL with its host in IDNA ASCII form; use it for requests
	Host string         // the host name in IDNA ASCII (lower case), or the IP literal
	Addr netip.AddrPort // the checked address the client dials for URL
}

// Guard checks URLs and owns the only HTTP client the crawler uses. It is safe for
// concurrent use.
type Guard struct {
	cfg    Config
	log    *slog.Logger
	limit  *hostLimiter
	client *http.Client

	// dial opens TCP connections; tests replace it to stand in for public addresses.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu   sync.Mutex
	pins map[string]netip.AddrPort // "host:port" (lower case) → checked address; guarded by mu
	self netip.AddrPort            // see SetSelf; guarded by mu
}

// SetSelf names the node's own HTTP listen address: the one non-global
// address (and the one http:// URL) the guard then lets through, named by
// its IP literal and port exactly, so the node can observe its own MCP face
// like any other server. Nothing else on that host passes. The zero value
// withdraws it.
func (g *Guard) SetSelf(ap netip.AddrPort) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.self = ap
}

func (g *Guard) selfAP() netip.AddrPort {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.self
}

// New validates cfg, fills in defaults and returns a Guard.
func New(cfg Config) (*Guard, error) {
	if cfg.MaxConnsPerHost < 0 {
		return nil, fmt.Errorf("configuring guard: MaxConnsPerHost %d is negative", cfg.MaxConnsPerHost)
	}
	if cfg.MaxConnsPerHost == 0 {
		cfg.MaxConnsPerHost = 2
	}
	if cfg.MaxResponseHeaderBytes < 0 {
		return nil, fmt.Errorf("configuring guard: MaxResponseHeaderBytes %d is negative", cfg.MaxResponseHeaderBytes)
	}
	if cfg.MaxResponseHeaderBytes == 0 {
		cfg.MaxResponseHeaderBytes = DefaultMaxResponseHeaderBytes
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Guard{
		cfg:   cfg,
		log:   cfg.Logger,
		limit: newHostLimiter(cfg.MaxConnsPerHost),
		pins:  make(map[string]netip.AddrPort),
	}
	d := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	if cfg.LocalAddr.IsValid() {
		d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(cfg.LocalAddr, 0))
	}
	g.dial = d.DialContext
	g.client = g.newClient()
	if cfg.AllowPrivate {
		g.log.Warn("ADDRESS GUARD RELAXED: http and private/loopback targets are allowed; use for tests and local demos only, never for a public observer")
	}
	return g, nil
}

// Client returns the guarded HTTP client. It never follows redirects (a 3xx comes back as the
// response), never decompresses, never uses a proxy, dials only checked addresses and holds
// the per-host connection bound. A request whose host was not yet checked is checked first.
func (g *Guard) Client() *http.Client { return g.client }

func (g *Guard) newClient() *http.Client {
	// HTTP/2 stays off (a custom DialContext disables it unless forced): over HTTP/1.1 one
	// request holds one connection, which is what the per-host bound counts.
	tr := &http.Transport{
		Proxy:               nil, // a proxy would resolve the name again, out of our sight
		DialContext:         g.dialChecked,
		TLSClientConfig:     &tls.Config{RootCAs: g.cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 10 * time.Second,
		DisableCompression:  true, // the MCP client decodes gzip/deflate itself, with bounds
		MaxConnsPerHost:     g.cfg.MaxConnsPerHost,
		MaxIdleConnsPerHost: g.cfg.MaxConnsPerHost,
		IdleConnTimeout:     30 * time.Second,
		// The header is read whole into memory before the body's own bounds apply.
		MaxResponseHeaderBytes: g.cfg.MaxResponseHeaderBytes,
	}
	return &http.Client{
		Transport: &transport{g: g, next: tr},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// transport applies the URL policy and the User-Agent to every request before the pooled
// http.Transport sees it.
type transport struct {
	g    *Guard
	next *http.Transport
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.g.approve(req.Context(), req.URL); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	out := req.Clone(req.Context())
	out.Header.Set("User-Agent", t.g.cfg.UserAgent)
	resp, err := t.next.RoundTrip(out)
	if err != nil && isHeaderTooLarge(err) {
		err = &HeaderTooLargeError{Host: req.URL.Hostname(), Limit: t.g.cfg.MaxResponseHeaderBytes, Err: err}
	}
	return resp, err
}

// CloseIdleConnections closes pooled connections, releasing their per-host slots.
func (t *transport) CloseIdleConnections() { t.next.CloseIdleConnections() }

// approve checks a request URL against the policy and makes sure its address is pinned,
// resolving only when no Check has pinned it yet.
func (g *Guard) approve(ctx context.Context, u *url.URL) error {
	if strings.ContainsAny(u.Host+u.Path+u.RawPath+u.RawQuery, "{}") {
		return ErrTemplatedURL
	}
	host, port, err := g.policy(u, u.String())
	if err != nil {
		return err
	}
	if _, ok := g.pin(host, port); ok {
		return nil
	}
	_, err = g.resolve(ctx, host, port)
	return err
}

// Forget drops every pinned address, so the guard holds none for hosts it
// is done with; a request after it is checked (and pinned) again. Call it
// between crawls, when no request is in flight: a request still under way
// would fail its next dial as unchecked.
func (g *Guard) Forget() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.pins)
}

// Pinned is how many addresses the guard holds pinned.
func (g *Guard) Pinned() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pins)
}

func (g *Guard) pin(host string, port uint16) (netip.AddrPort, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ap, ok := g.pins[pinKey(host, port)]
	return ap, ok
}

func pinKey(host string, port uint16) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// dialKey turns the transport's dial address into a pin key: the transport writes the host as
// the URL had it (already IDNA ASCII), but not lower-cased and with any trailing dot.
func dialKey(addr string) (host, key string, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", err
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return host, net.JoinHostPort(host, port), nil
}

// dialChecked is the transport's only way out: it dials the address pinned for addr's host
// and port, after taking one of the host's connection slots, which the connection gives back
// when it is closed.
func (g *Guard) dialChecked(ctx context.Context, network, addr string) (net.Conn, error) {
	host, key, err := dialKey(addr)
	if err != nil {
		return nil, fmt.Errorf("dialling %s: %w", addr, err)
	}
	g.mu.Lock()
	ap, ok := g.pins[key]
	g.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("dialling %s: %w", addr, ErrUnchecked)
	}
	if why := NonGlobal(ap.Addr()); why != "" && !g.cfg.AllowPrivate && (!ap.IsValid() || ap != g.selfAP()) {
		return nil, &BlockedError{Host: host, Addr: ap.Addr(), Reason: why}
	}
	release, err := g.acquireForDial(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("waiting for a connection slot to %s: %w", host, err)
	}
	conn, err := g.dial(ctx, "tcp", ap.String())
	if err != nil {
		release()
		return nil, err
	}
	return &slotConn{Conn: conn, release: release}, nil
}

// acquireForDial takes a host slot. When none is free it first closes idle pooled connections:
// an idle connection to another port of the same host holds a slot the pool would never hand
// to this one, so waiting alone could last until the idle timeout.
func (g *Guard) acquireForDial(ctx context.Context, host string) (func(), error) {
	if release, ok := g.limit.tryAcquire(host); ok {
		return release, nil
	}
	g.client.CloseIdleConnections()
	return g.limit.acquire(ctx, host)
}

// Acquire takes one of host's connection slots for the caller, for a scheduler that wants to
// hold back work it cannot start. It counts against the same bound as connections, so a
// caller holding a slot leaves one fewer for its own requests. release is idempotent.
func (g *Guard) Acquire(ctx context.Context, host string) (release func(), err error) {
	return g.limit.acquire(ctx, strings.TrimSuffix(strings.ToLower(host), "."))
}

// slotConn gives its host slot back exactly once, when the connection is closed.
type slotConn struct {
	net.Conn
	release func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
