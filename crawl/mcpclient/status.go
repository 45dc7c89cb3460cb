package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/histor-observer/histor/log/clip"
)

// MaxDetailBytes bounds an Observation's Detail. A detail often quotes what
// the server sent (an event name, a header value, a member name), and it is
// stored with the target, loaded every crawl and logged, so a server must
// not choose its size.
const MaxDetailBytes = 512

// ClipDetail returns s if it fits MaxDetailBytes, else its longest prefix
// that ends on a rune boundary and, with "…" appended, still fits.
func ClipDetail(s string) string { return clip.String(s, MaxDetailBytes) }

// StopError ends an observation with a status. Observe turns it into the
// Observation's Status and Detail; it is exported so tests and callers that
// wrap the client can tell a server's behaviour from a transport failure.
type StopError struct {
	Status string
	Detail string
}

func (e *StopError) Error() string { return e.Status + ": " + e.Detail }

func stopf(status, format string, args ...any) error {
	return &StopError{Status: status, Detail: fmt.Sprintf(format, args...)}
}

// fallbackError says the modern attempt was declined in a way that sends the
// client to the legacy lifecycle.
type fallbackError struct{ reason string }

func (e *fallbackError) Error() string { return "modern protocol declined: " + e.reason }

func isFallback(err error) bool {
	var f *fallbackError
	return errors.As(err, &f)
}

// classify maps err to a status and a short detail. The observation deadline
// wins over whatever error the cancelled read surfaced as.
func (c *Client) classify(ctx context.Context, err error) (string, string) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return StatusTimeout, fmt.Sprintf("no complete answer within %s", c.cfg.Deadline)
	}
	var he *httpStatusError
	if errors.As(err, &he) {
		err = he.stop()
	}
	var stop *StopError
	if errors.As(err, &stop) {
		return stop.Status, stop.Detail
	}
	if c.cfg.Classify != nil {
		if s, ok := c.cfg.Classify(err); ok {
			return s, shortErr(err)
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return StatusTimeout, shortErr(err)
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return StatusConnect, shortErr(err)
	}
	return StatusNetwork, shortErr(err)
}

// shortErr keeps a detail line short; server-chosen text can be long.
func shortErr(err error) string { return clip.String(err.Error(), shortErrBytes) }

// shortErrBytes bounds the detail of a transport error.
const shortErrBytes = 200
