package aimarket

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/log/canon"
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

// readInvoke reads the body as HISTOR's read_json does (MaxInvokeBytes,
// JSON, an object) and splits it into capability and input.
func (p *Peer) readInvoke(w http.ResponseWriter, r *http.Request) (*invokeCall, error) {
	addr, ok := httpx.ClientAddr(r, p.trusted)
	if !ok {
		return nil, refuse(http.StatusBadRequest, "unreadable client address")
	}
	raw, status, err := httpx.ReadBody(w, r, MaxInvokeBytes)
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
func (m Mount) invoke(p *Peer, call *invokeCall) (any, error) {
	if call.capability == "histor.check@v1" {
		return invokeCheck(m.checker(), call)
	}
	if lim := p.invokes; lim != nil {
		if ok, _ := lim.Allow(call.client); !ok {
			return nil, refuse(http.StatusTooManyRequests, "too many calls; slow down")
		}
	}
	switch call.capability {
	case "histor.server@v1":
		return invokeServer(m.model(), call.input)
	case "histor.changes@v1":
		return invokeChanges(m.model(), call.input, call.base)
	}
	return nil, refuse(http.StatusNotFound, "unknown capability")
}

// invokeCheck is POST /api/v1/check with the input as its body: the same
// limit, parser and signed answer.
func invokeCheck(c *check.Checker, call *invokeCall) (any, error) {
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
func invokeServer(md *Model, in map[string]any) (any, error) {
	if md == nil {
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
	cands := md.Catalog.ByName(nm)
	if ep != "" {
		cands = md.Catalog.ByEndpoint(ep)
	}
	if len(cands) == 0 {
		return nil, refuse(http.StatusNotFound, "unknown server")
	}
	now := md.Now()
	out := make([]views.Summary, 0, maxServerMatches)
	for _, s := range cands[:min(len(cands), maxServerMatches)] {
		out = append(out, views.Summarize(s, now))
	}
	return viaJSON(map[string]any{"servers": out})
}

// viaJSON is v as our JSON writes it, read back for PyJSON.
func viaJSON(v any) (any, error) {
	b, err := canon.MarshalPlain(v)
	if err != nil {
		return nil, err
	}
	return generic(b)
}

// invokeChanges is the newest changes (limit 1–50, default 20), each cut
// to what a hub's buyer needs, the full diff one link away.
func invokeChanges(md *Model, in map[string]any, base string) (any, error) {
	if md == nil {
		return nil, refuse(http.StatusServiceUnavailable, "this node serves no crawl state")
	}
	cs, err := md.Catalog.Changes(0, changesLimit(in))
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(cs))
	for _, row := range views.ChangeRows(md.Catalog, cs) {
		c, err := compactChange(row, base)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return map[string]any{"changes": out}, nil
}

// changesLimit is the input's limit, clamped to 1–50 as HISTOR clamps it;
// the default when it is missing or not an integer literal.
func changesLimit(in map[string]any) int {
	n, ok := in["limit"].(json.Number)
	if !ok || strings.ContainsAny(string(n), ".eE") {
		return defaultChangesInvoke
	}
	if v, err := n.Int64(); err == nil {
		return int(max(1, min(v, maxChangesInvoke)))
	}
	if strings.HasPrefix(string(n), "-") {
		return 1
	}
	return maxChangesInvoke
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
