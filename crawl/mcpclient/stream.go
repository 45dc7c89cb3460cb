package mcpclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
)

// conn carries JSON-RPC messages to one server: streamable HTTP (a POST per
// message, the reply in its body) or legacy HTTP+SSE (POSTs, replies on a
// GET stream).
type conn interface {
	call(ctx context.Context, id int64, method string, params map[string]any, budget int64) (*reply, error)
	notify(ctx context.Context, method string) error
	setProtocol(v string)
	setSession(h http.Header) error
}

var (
	versionRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	sessionRE = regexp.MustCompile(`^[\x21-\x7e]{1,256}$`) // MCP: visible ASCII only
)

// httpStatusError is a non-2xx answer; body (bounded) lets the modern attempt
// tell a modern JSON-RPC error from a legacy server's refusal.
type httpStatusError struct {
	code int
	body []byte
	ctyp string
}

func (e *httpStatusError) Error() string { return fmt.Sprintf("HTTP %d", e.code) }

// stop turns the status into the observation status HISTOR names.
func (e *httpStatusError) stop() error {
	if e.code >= 300 && e.code < 400 {
		return stopf(StatusRedirect, "redirect (HTTP %d) not followed", e.code)
	}
	return &StopError{Status: fmt.Sprintf("http-%d", e.code), Detail: statusDetail(e.code)}
}

// statusDetail says what an HTTP status stopping an observation means.
// Only 401 asks for credentials; a 403 is a refusal, often of a Host the
// server does not serve (the MCP spec tells servers to answer a foreign
// Host with 403 against DNS rebinding), so it never reads as one.
func statusDetail(code int) string {
	switch code {
	case http.StatusUnauthorized:
		return "not observed: the server requires authorisation"
	case http.StatusForbidden:
		return "not observed: forbidden (HTTP 403)"
	}
	return ""
}

// streamConn is streamable HTTP, modern or legacy.
type streamConn struct {
	c        *Client
	endpoint string
	session  string // echoed Mcp-Session-Id; checked visible ASCII
	protocol string // MCP-Protocol-Version header; only a date-shaped value
	modern   bool   // adds Mcp-Method
}

func (s *streamConn) setProtocol(v string) {
	if versionRE.MatchString(v) {
		s.protocol = v
	}
}

func (s *streamConn) setSession(h http.Header) error {
	vals := h.Values("Mcp-Session-Id")
	if len(vals) == 0 {
		return nil
	}
	if len(vals) > 1 || !sessionRE.MatchString(vals[0]) {
		return stopf(StatusProtocol, "Mcp-Session-Id is not one visible-ASCII value of at most 256 bytes")
	}
	s.session = vals[0]
	return nil
}

func (s *streamConn) call(ctx context.Context, id int64, method string, params map[string]any, budget int64) (*reply, error) {
	resp, err := s.post(ctx, method, request(id, method, params))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := s.c.checkStatus(resp); err != nil {
		return nil, err
	}
	return s.c.readReply(resp, id, min(budget, s.c.cfg.MaxResponseBytes))
}

func (s *streamConn) notify(ctx context.Context, method string) error {
	resp, err := s.post(ctx, method, request(0, method, nil))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return s.c.checkStatus(resp)
}

func (s *streamConn) post(ctx context.Context, method string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, stopf(StatusClientErr, "building request: %v", err)
	}
	s.c.setCommon(req.Header)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.protocol != "" {
		req.Header.Set("MCP-Protocol-Version", s.protocol)
	}
	if s.session != "" {
		req.Header.Set("Mcp-Session-Id", s.session)
	}
	if s.modern {
		req.Header.Set("Mcp-Method", method)
	}
	return s.c.http.Do(req)
}

// close ends a legacy session; a server may refuse with 405, and nothing it
// answers changes the observation.
func (s *streamConn) close(ctx context.Context) {
	if s.session == "" || ctx.Err() != nil {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.endpoint, nil)
	if err != nil {
		return
	}
	s.c.setCommon(req.Header)
	req.Header.Set("Mcp-Session-Id", s.session)
	if s.protocol != "" {
		req.Header.Set("MCP-Protocol-Version", s.protocol)
	}
	resp, err := s.c.http.Do(req)
	if err == nil {
		resp.Body.Close()
	}
}

func (c *Client) setCommon(h http.Header) {
	h.Set("User-Agent", c.cfg.UserAgent)
	// Set explicitly so net/http does not decode for us: we decode with the
	// byte bound applied to the decompressed size, and refuse stacked codings.
	h.Set("Accept-Encoding", "gzip, deflate")
}

// checkStatus turns a non-2xx answer into an httpStatusError, keeping up to
// 64 KiB of an error body for the modern fallback decision.
func (c *Client) checkStatus(resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	e := &httpStatusError{code: resp.StatusCode, ctyp: resp.Header.Get("Content-Type")}
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		if body, err := decoded(resp); err == nil {
			e.body, _ = io.ReadAll(io.LimitReader(body, 64<<10))
		}
	}
	return e
}
