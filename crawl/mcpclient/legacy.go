package mcpclient

import (
	"context"
	"errors"
	"strings"
)

// Method names this client can send. tools/call is deliberately absent.
const (
	methodDiscover    = "server/discover"
	methodInitialize  = "initialize"
	methodInitialized = "notifications/initialized"
	methodToolsList   = "tools/list"
)

// clientInfo is fixed: some servers switch their tool set on clientInfo, so
// every observation must present the same one.
func (c *Client) clientInfo() map[string]any {
	return map[string]any{"name": "histor", "version": c.cfg.ClientVersion}
}

// legacy runs the handshake-era lifecycle over cn and drains tools/list.
func (c *Client) legacy(ctx context.Context, cn conn, era string, obs *Observation) error {
	obs.Era = era
	init, err := cn.call(ctx, 1, methodInitialize, map[string]any{
		"protocolVersion": LegacyVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      c.clientInfo(),
	}, c.cfg.MaxResponseBytes)
	if err != nil {
		return err
	}
	res, err := init.result(methodInitialize)
	if err != nil {
		return err
	}
	recordServer(obs, res, res["serverInfo"])
	if v, ok := res["protocolVersion"].(string); ok {
		obs.ProtocolVersion = truncate(v, 40)
	}
	if err := cn.setSession(init.header); err != nil {
		return err
	}
	// Echoed only if date-shaped (a CR/LF would be header injection);
	// otherwise the version we asked for.
	cn.setProtocol(LegacyVersion)
	cn.setProtocol(obs.ProtocolVersion)
	if err := cn.notify(ctx, methodInitialized); err != nil && ctx.Err() != nil {
		return err
	}
	// A notification needs no answer; some servers 202 it, some 4xx it.
	return c.drainTools(ctx, cn, 2, nil, obs)
}

// recordServer keeps serverInfo and instructions as sent.
func recordServer(obs *Observation, res map[string]any, info any) {
	if m, ok := info.(map[string]any); ok {
		obs.ServerInfo = m
	}
	if s, ok := res["instructions"].(string); ok {
		obs.Instructions = &s
	}
}

// truncate keeps at most n bytes of s, still valid UTF-8, so a recorded
// value can always be canonicalised into a label.
func truncate(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "")
}

// drainTools reads every tools/list page into obs.Tools. meta, if set, is
// sent as params._meta (the modern protocol's per-request context).
func (c *Client) drainTools(ctx context.Context, cn conn, id int64, meta map[string]any, obs *Observation) error {
	var tools []any
	spent := int64(0)
	seen := map[string]bool{}
	cursor := ""
	for {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		if meta != nil {
			params["_meta"] = meta
		}
		budget := c.cfg.MaxToolSetBytes - spent
		r, err := cn.call(ctx, id, methodToolsList, params, budget)
		if err != nil {
			return toolSetBound(err, obs.Pages, c.cfg.MaxToolSetBytes)
		}
		spent += r.size
		obs.Pages++
		page, next, err := toolsPage(r)
		if err != nil {
			return err
		}
		if tools = append(tools, page...); len(tools) > c.cfg.MaxTools {
			return stopf(StatusTooLarge, "more than %d tools", c.cfg.MaxTools)
		}
		if next == "" {
			obs.Tools = tools
			return nil
		}
		if seen[next] || next == cursor {
			return stopf(StatusPartial, "pagination cursor repeated after %d pages; not drained", obs.Pages)
		}
		if obs.Pages >= c.cfg.MaxPages {
			return stopf(StatusPartial, "more than %d pages; not drained", c.cfg.MaxPages)
		}
		seen[next], cursor = true, next
		id++
	}
}

// toolSetBound names the tool-set budget when a later page ran out of it.
func toolSetBound(err error, pages int, limit int64) error {
	var stop *StopError
	if pages > 0 && errors.As(err, &stop) && stop.Status == StatusTooLarge {
		return stopf(StatusTooLarge, "tool set exceeded %d bytes", limit)
	}
	return err
}

// toolsPage returns one page's tools and its nextCursor ("" at the end).
func toolsPage(r *reply) ([]any, string, error) {
	res, err := r.result(methodToolsList)
	if err != nil {
		return nil, "", err
	}
	page, ok := res["tools"].([]any)
	if !ok {
		return nil, "", stopf(StatusProtocol, "tools/list result has no tools array")
	}
	switch next := res["nextCursor"].(type) {
	case nil:
		return page, "", nil
	case string:
		return page, next, nil
	default:
		return nil, "", stopf(StatusProtocol, "tools/list nextCursor is not a string")
	}
}
