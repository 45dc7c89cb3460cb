package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/check"
	"github.com/histor-observer/histor/node/views"
)

// invokeError is a refused invoke: HISTOR's status and detail.
type invokeError struct {
	status int
	detail string
}

func (e *invokeError) Error() string { return e.detail }

func refuse(status int, detail string) error { return &invokeError{status, detail} }

// invokeCall is one parsed invoke: the capability, the input as sent (the
// "input" member when it is an object, else the whole body, as HISTOR
// reads it) and the client it came from.
type invokeCall struct {
	capability string
	input      map[string]any // as Python would read it, numbers as literals
	inputRaw   []byte         // the input's own bytes, for /check's strict parser
	client     httpx.ClientKey
	base       string // the peer's link prefix for this request
}

// serveInvoke answers POST /ai-market/v2/invoke and its CORS preflight.
func (a *api) serveInvoke(w http.ResponseWriter, r *http.Request) {
	p := a.peer(w)
	if p == nil {
		return
	}
	if r.Method == http.MethodOptions {
		h := w.Header()
		h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Content-Type")
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	call, err := p.readInvoke(w, r)
	var result any
	if err == nil {
		result, err = a.invoke(call)
	}
	var reply map[string]any
	if err == nil {
		reply, err = p.invokeReply(result, call.capability, call.input)
	}
	var ie *invokeError
	switch {
	case errors.As(err, &ie):
		a.fail(w, ie.status, ie.detail)
	case err != nil:
		a.internal(w, r, "answering an invoke", err)
	default:
		w.Header().Set("Cache-Control", "no-store")
		a.writePy(w, r, reply)
	}
}

// readInvoke reads the body as HISTOR's read_json does (2 MiB, JSON, an
// object) and splits it into capability and input.
func (p *aimarketPeer) readInvoke(w http.ResponseWriter, r *http.Request) (*invokeCall, error) {
	addr, ok := httpx.ClientAddr(r, p.trusted)
	if !ok {
		return nil, refuse(http.StatusBadRequest, "unreadable client address")
	}
	raw, status, err := httpx.ReadBody(w, r, check.MaxBodyBytes)
	if err != nil {
		return nil, refuse(status, err.Error())
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	v, err := generic(raw)
	if err != nil || json.Unmarshal(raw, new(any)) != nil {
		return nil, refuse(http.StatusBadRequest, "body is not JSON")
	}
	body, ok := v.(map[string]any)
	if !ok {
		return nil, refuse(http.StatusBadRequest, "body must be a JSON object")
	}
	call := &invokeCall{client: httpx.KeyOf(addr), input: body, inputRaw: raw, base: p.baseURL(r)}
	call.capability, _ = body["capability_id"].(string)
	if in, ok := body["input"].(map[string]any); ok {
		var members map[string]json.RawMessage
		json.Unmarshal(raw, &members) // it parsed above
		call.input, call.inputRaw = in, members["input"]
	}
	return call, nil
}

// invoke answers one capability from the node's own code.
func (a *api) invoke(call *invokeCall) (any, error) {
	if call.capability == "histor.check@v1" {
		return a.invokeCheck(call)
	}
	if lim := a.agent.invokes; lim != nil {
		if ok, _ := lim.Allow(call.client); !ok {
			return nil, refuse(http.StatusTooManyRequests, "too many calls; slow down")
		}
	}
	switch call.capability {
	case "histor.server@v1":
		return a.invokeServer(call.input)
	case "histor.changes@v1":
		return a.invokeChanges(call.input, call.base)
	}
	return nil, refuse(http.StatusNotFound, "unknown capability")
}

// invokeCheck is POST /api/v1/check with the input as its body: the same
// limit, parser and signed answer.
func (a *api) invokeCheck(call *invokeCall) (any, error) {
	c := a.check
	if !c.Available() {
		return nil, refuse(http.StatusServiceUnavailable, "check is not available: this node has no crawl state")
	}
	if ok, _ := c.Allow(call.client); !ok {
		return nil, refuse(http.StatusTooManyRequests, "too many checks; slow down")
	}
	q, err := check.ParseQuery(call.inputRaw)
	if err != nil {
		return nil, refuse(http.StatusBadRequest, err.Error())
	}
	doc, err := c.Answer(q, call.client)
	if err != nil {
		return nil, err
	}
	return generic(doc)
}

// invokeServer is up to ten of the targets at an endpoint (or of a name),
// each as /api/v1/servers summarises it.
func (a *api) invokeServer(in map[string]any) (any, error) {
	rd := a.read.Load()
	if rd == nil {
		return nil, refuse(http.StatusServiceUnavailable, "this node serves no crawl state")
	}
	endpoint, name := in["endpoint"], in["name"]
	for _, v := range []any{endpoint, name} {
		s, isStr := v.(string)
		if v != nil && (!isStr || strings.IndexByte(s, 0) >= 0 || utf8.RuneCountInString(s) > check.MaxTextChars) {
			return nil, refuse(http.StatusBadRequest, "endpoint and name must be strings")
		}
	}
	ep, _ := endpoint.(string)
	nm, _ := name.(string)
	cands := rd.Catalog.ByName(nm)
	if ep != "" {
		cands = rd.Catalog.ByEndpoint(ep)
	}
	if len(cands) == 0 {
		return nil, refuse(http.StatusNotFound, "unknown server")
	}
	now := rd.now()
	out := make([]views.Summary, 0, maxServerMatches)
	for _, s := range cands[:min(len(cands), maxServerMatches)] {
		out = append(out, views.Summarize(s, now))
	}
	return viaJSON(map[string]any{"servers": out})
}

// viaJSON is v as our JSON writes it, read back for PyJSON.
func viaJSON(v any) (any, error) {
	b, err := encodeJSON(v)
	if err != nil {
		return nil, err
	}
	return generic(b)
}

// invokeChanges is the newest changes (limit 1–50, default 20), each cut
// to what a hub's buyer needs, the full diff one link away.
func (a *api) invokeChanges(in map[string]any, base string) (any, error) {
	rd := a.read.Load()
	if rd == nil {
		return nil, refuse(http.StatusServiceUnavailable, "this node serves no crawl state")
	}
	limit := defaultChangesInvoke
	if n, ok := in["limit"].(json.Number); ok && !strings.ContainsAny(string(n), ".eE") {
		if v, err := n.Int64(); err == nil {
			limit = int(max(1, min(v, maxChangesInvoke)))
		} else if strings.HasPrefix(string(n), "-") {
			limit = 1
		} else {
			limit = maxChangesInvoke
		}
	}
	cs, err := rd.Catalog.Changes(0, limit)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(cs))
	for _, row := range views.ChangeRows(rd.Catalog, cs) {
		c, err := compactChange(row, base)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return map[string]any{"changes": out}, nil
}

// compactChange is HISTOR's compact_change: bounded lists, the page link.
func compactChange(row views.ChangeRow, base string) (map[string]any, error) {
	v, err := generic(row.Summary)
	if err != nil {
		return nil, err
	}
	s, _ := v.(map[string]any)
	list := func(k string) []any {
		l, _ := s[k].([]any)
		return l[:min(len(l), maxChangeItems)]
	}
	modified := []any{}
	for _, m := range list("modified") {
		if mm, ok := m.(map[string]any); ok {
			modified = append(modified, mm["tool"])
		}
	}
	addrs, _ := s["newAddresses"].([]any)
	total, ok := s["newAddressesTotal"]
	if !ok {
		total = len(addrs)
	}
	var label any
	if row.LabelID != nil {
		label = *row.LabelID
	}
	return map[string]any{
		"id": row.ID, "server": row.Name, "endpoint": row.Endpoint, "observedAt": row.ObservedAt,
		"added": list("added"), "removed": list("removed"), "modified": modified,
		"newAddresses": list("newAddresses"), "newAddressesTotal": total,
		"detail": s["detail"], "label": label, "page": base + "/s/" + row.TargetID,
	}, nil
}
