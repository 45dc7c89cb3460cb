package mcpclient

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/histor-observer/histor/log/canon"
)

// reply is the JSON-RPC response matching one request.
type reply struct {
	msg    map[string]any
	size   int64 // decompressed bytes read for it
	header http.Header
}

// result returns the reply's result object, or a protocol stop naming the
// JSON-RPC error the server sent instead.
func (r *reply) result(method string) (map[string]any, error) {
	if e, ok := r.msg["error"]; ok {
		code, msg := rpcError(e)
		return nil, stopf(StatusProtocol, "%s returned JSON-RPC error %d: %.100q", method, code, msg)
	}
	res, ok := r.msg["result"].(map[string]any)
	if !ok {
		return nil, stopf(StatusProtocol, "%s result is not an object", method)
	}
	return res, nil
}

// rpcError returns a JSON-RPC error object's code and message (0, "" when absent).
func rpcError(e any) (int64, string) {
	m, _ := e.(map[string]any)
	code, _ := m["code"].(int64)
	msg, _ := m["message"].(string)
	return code, msg
}

// request builds the bytes of one JSON-RPC request. The method names passed
// here are literals of this package; none of them is tools/call.
func request(id int64, method string, params map[string]any) []byte {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != 0 {
		m["id"] = id
	}
	if params != nil {
		m["params"] = params
	}
	b, err := canon.Marshal(m)
	if err != nil {
		// Only this package's own values reach here; failing is a bug.
		panic(fmt.Sprintf("encoding %s request: %v", method, err))
	}
	return b
}

// parseMessage strictly parses one JSON-RPC message, keeping refused numbers
// for log/mtl to judge. notJSON reports a refusal because the bytes are not
// JSON at all, as opposed to JSON refused for a reason that matters
// (duplicates, depth, bad UTF-8).
func (c *Client) parseMessage(b []byte) (v any, notJSON bool, err error) {
	v, err = canon.ParseDeferringNumbers(b, canon.Limits{MaxDepth: c.cfg.MaxJSONDepth, MaxBytes: len(b) + 1})
	if err == nil {
		return v, false, nil
	}
	var ce *canon.Error
	if errors.As(err, &ce) {
		return nil, ce.Code == canon.CodeSyntax, stopf(StatusProtocol, "message refused (%s): %s", ce.Code, ce.Reason)
	}
	return nil, false, stopf(StatusProtocol, "message refused: %v", err)
}

// matching returns the response to request id in msg (a message or a batch).
func matching(msg any, id int64) (map[string]any, bool) {
	if batch, ok := msg.([]any); ok {
		for _, m := range batch {
			if r, ok := matching(m, id); ok {
				return r, true
			}
		}
		return nil, false
	}
	m, ok := msg.(map[string]any)
	if !ok {
		return nil, false
	}
	got, _ := m["id"].(int64)
	_, hasResult := m["result"]
	_, hasError := m["error"]
	return m, got == id && (hasResult || hasError)
}

// readReply reads the response to request id from resp's body, as JSON or as
// an event stream that may carry other messages first.
func (c *Client) readReply(resp *http.Response, id int64, budget int64) (*reply, error) {
	body, err := decoded(resp)
	if err != nil {
		return nil, err
	}
	ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ctype == "text/event-stream" {
		sr := newSSEReader(body, budget, c.cfg.MaxSSEEventBytes, "event stream")
		msg, err := c.awaitEvent(sr, id, "")
		if err != nil {
			return nil, err
		}
		return &reply{msg: msg, size: sr.total, header: resp.Header}, nil
	}
	b, err := readBounded(body, budget, "response")
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, stopf(StatusProtocol, "empty response body (HTTP %d)", resp.StatusCode)
	}
	v, _, err := c.parseMessage(b)
	if err != nil {
		return nil, err
	}
	msg, ok := matching(v, id)
	if !ok {
		return nil, stopf(StatusProtocol, "no JSON-RPC response for request %d", id)
	}
	return &reply{msg: msg, size: int64(len(b)), header: resp.Header}, nil
}

// awaitEvent reads events until one carries the response to id, skipping
// server requests and notifications. A non-JSON event is someone else's and
// skipped; JSON canon refuses (duplicates, depth, bad UTF-8) ends the wait.
// wantName, if set, is the only event name considered (legacy SSE "message").
func (c *Client) awaitEvent(sr *sseReader, id int64, wantName string) (map[string]any, error) {
	for {
		ev, err := sr.next()
		if errors.Is(err, io.EOF) {
			return nil, stopf(StatusProtocol, "event stream ended without the response to request %d", id)
		}
		if err != nil {
			return nil, err
		}
		if wantName != "" && ev.name != wantName && !(wantName == "message" && ev.name == "") {
			continue
		}
		v, notJSON, err := c.parseMessage(ev.data)
		if notJSON {
			continue
		}
		if err != nil {
			return nil, err
		}
		if msg, ok := matching(v, id); ok {
			return msg, nil
		}
	}
}
