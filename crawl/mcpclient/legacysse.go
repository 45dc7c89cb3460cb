package mcpclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// observeSSE observes a legacy HTTP+SSE remote (2024-11-05 transport): a GET
// stream whose first event names the URI to POST to, replies arriving on the
// stream as "message" events.
func (c *Client) observeSSE(ctx context.Context, endpoint string, obs *Observation) error {
	base, err := url.Parse(endpoint)
	if err != nil {
		return stopf(StatusClientErr, "parsing endpoint: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return stopf(StatusClientErr, "building request: %v", err)
	}
	c.setCommon(req.Header)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := c.checkStatus(resp); err != nil {
		return err
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "text/event-stream" {
		return stopf(StatusProtocol, "GET answered %q, not an event stream", ct)
	}
	body, err := decoded(resp)
	if err != nil {
		return err
	}
	sr := newSSEReader(body, c.cfg.MaxResponseBytes+c.cfg.MaxToolSetBytes, c.cfg.MaxSSEEventBytes, "event stream")
	post, err := postEndpoint(sr, base)
	if err != nil {
		return err
	}
	return c.legacy(ctx, &sseConn{c: c, post: post, stream: sr}, EraLegacySSE, obs)
}

// postEndpoint reads the first event, which must be "endpoint", and resolves
// it against the stream's URL. Project rule: it must be the same origin, so
// a server cannot point the crawler at another host.
func postEndpoint(sr *sseReader, base *url.URL) (string, error) {
	ev, err := sr.next()
	if errors.Is(err, io.EOF) {
		return "", stopf(StatusProtocol, "event stream ended before the endpoint event")
	}
	if err != nil {
		return "", err
	}
	if ev.name != "endpoint" {
		return "", stopf(StatusProtocol, "first event is %q, not endpoint", ev.name)
	}
	u, err := base.Parse(string(bytes.TrimSpace(ev.data)))
	if err != nil {
		return "", stopf(StatusProtocol, "endpoint event is not a URI reference")
	}
	if !strings.EqualFold(u.Scheme, base.Scheme) || !strings.EqualFold(u.Host, base.Host) || u.User != nil {
		return "", stopf(StatusProtocol, "endpoint event names another origin (%.100s)", u.Redacted())
	}
	return u.String(), nil
}

// sseConn POSTs messages and reads replies from the GET stream.
type sseConn struct {
	c        *Client
	post     string
	stream   *sseReader
	protocol string
}

func (s *sseConn) setProtocol(v string) {
	if versionRE.MatchString(v) {
		s.protocol = v
	}
}

// setSession does nothing: an HTTP+SSE session lives in the POST URI.
func (s *sseConn) setSession(http.Header) error { return nil }

func (s *sseConn) call(ctx context.Context, id int64, method string, params map[string]any, budget int64) (*reply, error) {
	if err := s.send(ctx, request(id, method, params)); err != nil {
		return nil, err
	}
	before := s.stream.total
	msg, err := s.c.awaitEvent(s.stream, id, "message")
	if err != nil {
		return nil, err
	}
	size := s.stream.total - before
	if size > min(budget, s.c.cfg.MaxResponseBytes) {
		return nil, stopf(StatusTooLarge, "response exceeded %d bytes", min(budget, s.c.cfg.MaxResponseBytes))
	}
	return &reply{msg: msg, size: size}, nil
}

func (s *sseConn) notify(ctx context.Context, method string) error {
	return s.send(ctx, request(0, method, nil))
}

func (s *sseConn) send(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.post, bytes.NewReader(body))
	if err != nil {
		return stopf(StatusClientErr, "building request: %v", err)
	}
	s.c.setCommon(req.Header)
	req.Header.Set("Content-Type", "application/json")
	if s.protocol != "" {
		req.Header.Set("MCP-Protocol-Version", s.protocol)
	}
	resp, err := s.c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return s.c.checkStatus(resp)
}
