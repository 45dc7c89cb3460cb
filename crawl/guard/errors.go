package guard

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ErrTemplatedURL is returned for a URL that still holds registry template variables
// ("https://{tenant}.example/mcp"). Such a URL is never resolved or dialled: filling the
// variables in is the operator's business, and guessing them would observe someone else.
var ErrTemplatedURL = errors.New("templated url: {…} variables are never dialled")

// ErrUnchecked is returned when the client is asked to dial a host:port that Check (or the
// client's own check of the request URL) has not approved. It means a bug in the guard's
// bookkeeping, never a property of the target, and is refused rather than resolved afresh.
var ErrUnchecked = errors.New("dial of a host that was not checked")

// BlockedError says a target resolved to an address the crawler must not connect to.
// The crawler records it as status "blocked-address".
type BlockedError struct {
	Host   string     // the host name as checked (IDNA ASCII), or the IP literal
	Addr   netip.Addr // the first refused answer
	Reason string     // which range it falls in
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("blocked address: %s resolves to %s, %s", e.Host, e.Addr, e.Reason)
}

// PolicyError says a URL is refused before any lookup: wrong scheme, userinfo, a host that is
// not a valid (IDNA) domain name, a bad port. The crawler records it as status
// "blocked-address" with Reason as the detail: the status list has no separate policy
// status, and in both cases the target is refused by the guard without a connection.
type PolicyError struct {
	URL    string
	Reason string
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("refused url %q: %s", e.URL, e.Reason)
}

// ResolveError says the host name did not resolve (or resolved to nothing). The crawler records
// it as status "connect": like a refused connection, the server could not be reached.
type ResolveError struct {
	Host string
	Err  error // nil when the lookup succeeded with no addresses
}

func (e *ResolveError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("resolving %s: no addresses", e.Host)
	}
	return fmt.Sprintf("resolving %s: %v", e.Host, e.Err)
}

func (e *ResolveError) Unwrap() error { return e.Err }

// HeaderTooLargeError says a server sent a response header over Config.MaxResponseHeaderBytes.
// The crawler records it as status "too-large", like any other bound a server exceeds.
type HeaderTooLargeError struct {
	Host  string
	Limit int64
	Err   error // net/http's own error
}

func (e *HeaderTooLargeError) Error() string {
	return fmt.Sprintf("response header from %s exceeded %d bytes", e.Host, e.Limit)
}

func (e *HeaderTooLargeError) Unwrap() error { return e.Err }

// headerTooLargeText is how net/http begins the error for a response header over
// Transport.MaxResponseHeaderBytes; it offers no error value to match, so the guard matches the
// text (a test pins it) — at the start of the innermost error only, since other net/http errors
// quote the server's bytes and a server could otherwise write this text to fake the status.
const headerTooLargeText = "net/http: server response headers exceeded "

func isHeaderTooLarge(err error) bool {
	for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
		err = u
	}
	return strings.HasPrefix(err.Error(), headerTooLargeText)
}

// Status maps an error from Check or from the client to the crawl status it stands for, and
// reports false for errors the guard did not produce (timeouts and network errors are the
// caller's to classify).
func Status(err error) (string, bool) {
	var (
		blocked *BlockedError
		policy  *PolicyError
		resolve *ResolveError
		header  *HeaderTooLargeError
	)
	switch {
	case errors.Is(err, ErrTemplatedURL):
		return "templated-url", true
	case errors.As(err, &blocked), errors.As(err, &policy):
		return "blocked-address", true
	case errors.As(err, &resolve):
		return "connect", true
	case errors.As(err, &header):
		return "too-large", true
	}
	return "", false
}
