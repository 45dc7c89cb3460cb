package desk

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/check"
)

// serveCheck renders /check: the form on GET; on POST, the node's own
// check of what was pasted (the function /api/v1/check answers with,
// counted against the same per-client limit) and its signed answer.
func (m Mount) serveCheck(w http.ResponseWriter, r *http.Request) {
	v := &CheckView{}
	if r.Method != http.MethodPost {
		m.render(w, r, http.StatusOK, "check", "Check a tool set", "check", v)
		return
	}
	status := m.runCheck(w, r, v)
	m.render(w, r, status, "check", "Check a tool set", "check", v)
}

// runCheck runs one check from the form into v and returns the status to
// answer with.
func (m Mount) runCheck(w http.ResponseWriter, r *http.Request, v *CheckView) int {
	c := m.checker()
	if !c.Available() {
		v.Error = "Check is not available: this node has no crawl state."
		return http.StatusServiceUnavailable
	}
	addr, ok := httpx.ClientAddr(r, c.TrustedProxies())
	if !ok {
		v.Error = "Unreadable client address."
		return http.StatusBadRequest
	}
	client := httpx.KeyOf(addr)
	if ok, retry := c.Allow(client); !ok {
		w.Header().Set("Retry-After", httpx.RetryAfter(retry))
		v.Error = "Too many checks from your address; try again in " + httpx.RetryAfter(retry) + " s."
		return http.StatusTooManyRequests
	}
	r.Body = http.MaxBytesReader(w, r.Body, check.MaxBodyBytes)
	if err := r.ParseForm(); err != nil {
		v.Error = "The form could not be read (at most 2 MiB)."
		return http.StatusRequestEntityTooLarge
	}
	v.Endpoint, v.Name, v.Tools = r.PostForm.Get("endpoint"), r.PostForm.Get("name"), r.PostForm.Get("tools")
	raw, err := checkBodyOf(v.Endpoint, v.Name, v.Tools)
	if err != nil {
		v.Error = err.Error()
		return http.StatusBadRequest
	}
	q, err := check.ParseQuery(raw)
	if err != nil {
		v.Error = err.Error()
		return http.StatusBadRequest
	}
	doc, err := c.Answer(q, client)
	if err != nil {
		m.Logger.Error("serving request", "path", r.URL.Path, "doing", "answering check", "err", err)
		v.Error = "Internal error while answering."
		return http.StatusInternalServerError
	}
	v.Answered, v.Answer = true, checkAnswer(doc)
	return http.StatusOK
}

// checkBodyOf builds the /api/v1/check body a form stands for. The tools
// are spliced in as pasted (a number's exact spelling matters to the
// digest): a tools/list result, a JSON-RPC answer holding one, or the
// tools array itself.
func checkBodyOf(endpoint, name, pasted string) ([]byte, error) {
	body := map[string]any{}
	if endpoint = strings.TrimSpace(endpoint); endpoint != "" {
		body["endpoint"] = endpoint
	}
	if name = strings.TrimSpace(name); name != "" {
		body["name"] = name
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	tools, err := pastedTools([]byte(strings.TrimSpace(pasted)))
	if err != nil || tools == nil {
		return b, err
	}
	if len(body) > 0 {
		b = append(b[:len(b)-1], ',')
	} else {
		b = b[:1]
	}
	b = append(append(append(b, `"tools":`...), tools...), '}')
	return b, nil
}

var errPasted = errors.New("paste a tools/list result or its tools array, as JSON")

// pastedTools finds the tools array in what was pasted; nil when nothing was.
func pastedTools(p []byte) (json.RawMessage, error) {
	if len(p) == 0 {
		return nil, nil
	}
	if p[0] == '[' {
		if !json.Valid(p) {
			return nil, errPasted
		}
		return p, nil
	}
	var wrap struct {
		Tools  json.RawMessage `json:"tools"`
		Result struct {
			Tools json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(p, &wrap); err != nil {
		return nil, errPasted
	}
	for _, t := range []json.RawMessage{wrap.Tools, wrap.Result.Tools} {
		if t = bytes.TrimSpace(t); len(t) > 0 && t[0] == '[' {
			return t, nil
		}
	}
	return nil, errPasted
}

// checkAnswer reads the signed answer back for the page, and keeps its
// exact bytes to copy (whitespace would not break the signature, which is
// over the canonical form, but the bytes as signed are the least to doubt).
func checkAnswer(doc []byte) CheckAnswer {
	var m map[string]any
	json.Unmarshal(doc, &m) // the node just wrote it
	ans := CheckAnswer{Match: str(m, "match"), Note: str(m, "note")}
	q, _ := m["query"].(map[string]any)
	ans.Digest = str(q, "toolSetDigest")
	ans.Known = "has no record of this server"
	if t, ok := m["target"].(map[string]any); ok {
		ans.TargetURL = "/s/" + str(t, "id")
		ans.Known = "lists " + str(t, "name")
	}
	obs, _ := m["observers"].([]any)
	agreement, _ := m["agreement"].(map[string]any)
	ans.Observers, ans.Agreement = toObservers(obs, agreement, "")
	ans.Signed = string(doc)
	return ans
}
