package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// Modern JSON-RPC error codes (2026-07-28).
const (
	codeHeaderMismatch     = -32020
	codeMissingCapability  = -32021
	codeUnsupportedVersion = -32022
)

// Per-request _meta keys of the modern protocol.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// observeModern observes with server/discover and modern tools/list. It
// returns a *fallbackError when the server does not speak the modern protocol.
func (c *Client) observeModern(ctx context.Context, endpoint string, obs *Observation) error {
	cn := &streamConn{c: c, endpoint: endpoint, modern: true}
	version := ModernVersion
	for range 2 {
		meta := c.modernMeta(version)
		cn.protocol = version
		res, retry, err := c.discover(ctx, cn, version, meta)
		if retry != "" {
			version = retry
			continue
		}
		if err != nil {
			return err
		}
		obs.Era, obs.ProtocolVersion = EraModern, version
		serverMeta, _ := res["_meta"].(map[string]any)
		recordServer(obs, res, serverMeta[metaServerInfo])
		return c.drainTools(ctx, cn, 2, meta, obs)
	}
	return &fallbackError{reason: "no mutually supported modern version"}
}

func (c *Client) modernMeta(version string) map[string]any {
	return map[string]any{
		metaProtocolVersion:    version,
		metaClientCapabilities: map[string]any{},
		metaClientInfo:         c.clientInfo(),
	}
}

// discover sends server/discover. It returns the result, or a modern
// version to retry with, or an error (a *fallbackError for a legacy server).
func (c *Client) discover(ctx context.Context, cn *streamConn, version string, meta map[string]any) (map[string]any, string, error) {
	r, err := cn.call(ctx, 1, methodDiscover, map[string]any{"_meta": meta}, c.cfg.MaxResponseBytes)
	var he *httpStatusError
	if errors.As(err, &he) {
		if !legacyAnswer(he.code) {
			return nil, "", err
		}
		v, _, perr := c.parseMessage(he.body)
		if perr != nil {
			return nil, "", &fallbackError{reason: fmt.Sprintf("HTTP %d without a JSON-RPC error", he.code)}
		}
		m, _ := v.(map[string]any)
		return c.discoverError(m["error"], version)
	}
	if err != nil {
		return nil, "", err
	}
	if e, ok := r.msg["error"]; ok {
		return c.discoverError(e, version)
	}
	res, err := r.result(methodDiscover)
	if err != nil {
		return nil, "", err
	}
	supported := versions(res["supportedVersions"])
	if slices.Contains(supported, version) {
		return res, "", nil
	}
	if next := pickModern(supported, version); next != "" {
		return nil, next, nil
	}
	return nil, "", &fallbackError{reason: "server/discover lists no modern version"}
}

// legacyAnswer says whether an HTTP error status to server/discover may be
// a handshake-era server refusing a method it does not know. Servers answer
// that with 400, 404, 405, 406, 415 or even 500; only answers that would
// stop the legacy lifecycle just the same (credentials, proxy credentials,
// rate limiting) end the observation here, so a legacy server is never
// recorded as http-5xx where HISTOR, which speaks only the legacy protocol,
// would have observed it.
func legacyAnswer(code int) bool {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired, http.StatusTooManyRequests:
		return false
	}
	return code >= 400 && code <= 599
}

// discoverError decides what a JSON-RPC error to server/discover means: a
// modern server refusing our version offers others; any error a modern server
// would not send means a legacy server.
func (c *Client) discoverError(e any, version string) (map[string]any, string, error) {
	code, msg := rpcError(e)
	switch code {
	case codeUnsupportedVersion:
		m, _ := e.(map[string]any)
		data, _ := m["data"].(map[string]any)
		if next := pickModern(versions(data["supported"]), version); next != "" {
			return nil, next, nil
		}
		return nil, "", &fallbackError{reason: "unsupported version, no modern alternative"}
	case codeHeaderMismatch, codeMissingCapability:
		return nil, "", stopf(StatusProtocol, "server/discover refused (%d): %.100q", code, msg)
	default:
		return nil, "", &fallbackError{reason: fmt.Sprintf("server/discover error %d", code)}
	}
}

func versions(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok && versionRE.MatchString(s) {
			out = append(out, s)
		}
	}
	return out
}

// pickModern returns the newest listed version at or after ModernVersion
// other than tried, or "".
func pickModern(supported []string, tried string) string {
	best := ""
	for _, v := range supported {
		if v >= ModernVersion && v != tried && v > best {
			best = v
		}
	}
	return best
}
