package stdio

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/sandbox"
)

// Talk runs one session with the server on run's pipes: initialize, the
// tool listing, then the canary calls. It never returns an error: every
// outcome is a Result status.
func Talk(ctx context.Context, cfg Config, run Run) *Result {
	cfg = cfg.withDefaults()
	started := run.Started
	if started.IsZero() {
		started = time.Now()
	}
	res := &Result{Started: started, Calls: sandbox.Coverage{Outcomes: []sandbox.CallOutcome{}}}
	s := newSession(ctx, cfg, run, started)
	defer s.close()
	if err := s.listing(res, started); err != nil {
		res.Status, res.Detail = statusOf(err)
		res.Tools = nil
	} else {
		res.Status = sandbox.StatusOK
		s.calls(res, run.Canary)
	}
	res.Ended = time.Now()
	res.BytesRead = s.read.Load()
	cfg.Logger.Debug("mcp stdio session", "status", res.Status, "detail", res.Detail, "tools", len(res.Tools),
		"pages", res.Pages, "attempted", res.Calls.Attempted, "successful", res.Calls.Successful,
		"bytes", res.BytesRead, "elapsed", res.Ended.Sub(started))
	return res
}

func statusOf(err error) (sandbox.Status, string) {
	var st *stop
	if errors.As(err, &st) {
		return st.status, st.detail
	}
	return sandbox.StatusProtocol, err.Error()
}

// listing is the startup phase: initialize, initialized, every tools/list page.
func (s *session) listing(res *Result, started time.Time) error {
	init, err := s.call("initialize", map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": ClientName, "version": s.cfg.ClientVersion},
	}, started.Add(s.cfg.InitTimeout))
	if err != nil {
		return err
	}
	r, err := result(init, "initialize")
	if err != nil {
		return err
	}
	res.ServerInfo, _ = r["serverInfo"].(map[string]any)
	if v, ok := r["protocolVersion"].(string); ok {
		res.ProtocolVersion = clip(v, 40)
	}
	if err := s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}, s.deadline); err != nil {
		return err
	}
	if err := s.list(res); err != nil {
		return err
	}
	res.Listed = time.Now()
	return nil
}

// list drains tools/list into res.Tools.
func (s *session) list(res *Result) error {
	cursor := ""
	for res.Pages < s.cfg.MaxPages {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		msg, err := s.call("tools/list", params, s.deadline)
		if err != nil {
			return err
		}
		res.Pages++
		page, next, err := toolsPage(msg)
		if err != nil {
			return err
		}
		if res.Tools = append(res.Tools, page...); len(res.Tools) > s.cfg.MaxTools {
			return stopf(sandbox.StatusTooManyTools, "more than %d tools", s.cfg.MaxTools)
		}
		if next == "" {
			if res.Tools == nil {
				res.Tools = []any{}
			}
			return nil
		}
		cursor = next
	}
	return stopf(sandbox.StatusTooManyPages, "tools/list still had a next cursor after %d pages", s.cfg.MaxPages)
}

// result returns a response's result object, or a protocol stop naming the
// JSON-RPC error sent instead.
func result(msg map[string]any, method string) (map[string]any, error) {
	if e, ok := msg["error"]; ok {
		b, _ := canon.Encode(e)
		return nil, stopf(sandbox.StatusProtocol, "%s returned an error: %s", method, clip(string(b), 300))
	}
	r, ok := msg["result"].(map[string]any)
	if !ok {
		return nil, stopf(sandbox.StatusProtocol, "%s result is not an object", method)
	}
	return r, nil
}

// toolsPage returns one page's tools and its nextCursor ("" at the end).
func toolsPage(msg map[string]any) ([]any, string, error) {
	r, err := result(msg, "tools/list")
	if err != nil {
		return nil, "", err
	}
	page, ok := r["tools"].([]any)
	if !ok {
		return nil, "", stopf(sandbox.StatusProtocol, "tools/list result has no tools array")
	}
	switch next := r["nextCursor"].(type) {
	case nil:
		return page, "", nil
	case string:
		return page, next, nil
	default:
		return nil, "", stopf(sandbox.StatusProtocol, "tools/list nextCursor is not a string")
	}
}

// clip keeps at most n bytes of s, still valid UTF-8.
func clip(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "")
}
