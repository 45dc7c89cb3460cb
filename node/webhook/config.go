// Package webhook delivers a node's security events to the HTTPS endpoints
// its operator configured, as HISTOR sends them: each event's RFC 8785
// bytes POSTed with X-Histor-Event-ID, X-Histor-Timestamp and
// X-Histor-Signature (sha256=<HMAC-SHA256 hex of "timestamp.payload"> under
// the subscription's secret), one event at a time per subscription and in
// cursor order, at least once. A failed delivery is retried after
// min(86400, 30·2^n) seconds, n being the failed attempts so far, as HISTOR
// counts them; every attempt is written to a delivery log the operator
// reads. The cursor, the attempt count, the next attempt's time and the log
// live in the event store, so a restart resumes where the node stopped.
//
// Destinations come only from the operator's configuration, never from
// anything the node observed; redirects are not followed and no proxy from
// the environment is used.
package webhook

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"
)

// Bounds and defaults.
const (
	// MinSecret is the shortest secret a subscription may have, HISTOR's.
	MinSecret = 32
	// MaxSubscriptions bounds the subscriptions one node delivers to.
	MaxSubscriptions = 16
	// DefaultMaxAttempts is how many times one event is tried before it is
	// given up (logged "abandoned") and the next one is delivered. With the
	// backoff this spans about ten days.
	DefaultMaxAttempts = 20
	// DefaultMaxPending bounds the events a subscription may lag behind;
	// beyond it the oldest are skipped (logged "skipped").
	DefaultMaxPending = 10_000
	// MaxPayload bounds the event bytes one delivery carries; a larger
	// event is given up rather than sent.
	MaxPayload = 64 << 10
	// maxResponse is the most of a response body read (and discarded), so
	// the connection closes cleanly without a receiver making us read more.
	maxResponse = 4 << 10
	// DefaultTimeout bounds one delivery: connect, TLS, request, response.
	DefaultTimeout = 10 * time.Second
	// MaxBackoff and baseBackoff are HISTOR's min(86400, 30·2^n) s.
	MaxBackoff  = 86400 * time.Second
	baseBackoff = 30 * time.Second
	// LogRecords is how many delivery records are kept per subscription.
	LogRecords = 1000
)

// Subscription is one operator-configured destination.
type Subscription struct {
	// URL is where events are POSTed: an absolute https URL, no user info.
	URL string
	// Secret keys the HMAC; at least MinSecret characters.
	Secret string
}

// ID names a subscription by its URL (the first 16 hex characters of the
// URL's SHA-256), so a changed destination is a new subscription with its
// own cursor, as HISTOR demands.
func (s Subscription) ID() string {
	d := sha256.Sum256([]byte(s.URL))
	return hex.EncodeToString(d[:8])
}

// ErrConfig is wrapped by every refused configuration.
var ErrConfig = errors.New("webhook config")

// Validate refuses what HISTOR refuses: anything but a fixed https
// destination, or a secret shorter than MinSecret.
func (s Subscription) Validate() error {
	u, err := url.Parse(s.URL)
	switch {
	case err != nil:
		return fmt.Errorf("%w: URL %q: %v", ErrConfig, s.URL, err)
	case u.Scheme != "https":
		return fmt.Errorf("%w: URL %q is not https", ErrConfig, s.URL)
	case u.Hostname() == "" || u.User != nil || u.Fragment != "" || u.Opaque != "":
		return fmt.Errorf("%w: URL %q must name a host, without user info or fragment", ErrConfig, s.URL)
	case len([]rune(s.Secret)) < MinSecret:
		return fmt.Errorf("%w: the secret of %s is shorter than %d characters", ErrConfig, s.URL, MinSecret)
	}
	return nil
}

// Config configures a Deliverer.
type Config struct {
	Subscriptions []Subscription
	// RootCAs are the roots a receiver's certificate must chain to; nil:
	// the system's.
	RootCAs *x509.CertPool
	// MaxAttempts, MaxPending and Timeout default to DefaultMaxAttempts,
	// DefaultMaxPending and DefaultTimeout.
	MaxAttempts int
	MaxPending  int
	Timeout     time.Duration
	Logger      *slog.Logger
	// UserAgent names the node to the receiver.
	UserAgent string
}

// Validate checks every subscription and fills in the defaults.
func (c *Config) Validate() error {
	if len(c.Subscriptions) > MaxSubscriptions {
		return fmt.Errorf("%w: more than %d subscriptions", ErrConfig, MaxSubscriptions)
	}
	seen := map[string]bool{}
	for _, s := range c.Subscriptions {
		if err := s.Validate(); err != nil {
			return err
		}
		if seen[s.URL] {
			return fmt.Errorf("%w: %s is configured twice", ErrConfig, s.URL)
		}
		seen[s.URL] = true
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.MaxPending == 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxAttempts < 1 || c.MaxPending < 1 || c.Timeout < 0 {
		return fmt.Errorf("%w: MaxAttempts, MaxPending and Timeout must be positive", ErrConfig)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Backoff is how long to wait after the n-th failed attempt at one event:
// min(86400, 30·2^n) seconds, HISTOR's (n is capped at 12 before the
// power, as HISTOR caps it).
func Backoff(n int) time.Duration {
	return min(MaxBackoff, baseBackoff<<min(max(n, 0), 12))
}

// client is the delivery client: no redirects, no proxy, the configured
// roots, no idle connections kept (deliveries are rare, and a kept
// connection is one more thing a receiver can hold open).
func (c *Config) client() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DisableKeepAlives = true
	t.TLSClientConfig = &tls.Config{RootCAs: c.RootCAs, MinVersion: tls.VersionTLS12}
	t.MaxResponseHeaderBytes = 16 << 10
	return &http.Client{
		Transport:     t,
		Timeout:       c.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
