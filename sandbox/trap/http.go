package trap

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// synthetic is every HTTP trap answer: success-shaped for the common APIs
// that mail or post something, and a provider of nothing.
var (
	synthetic = []byte(`{"ok":true,"id":"histor-synthetic","status":"sent","message":"OK"}`)
	tooLarge  = []byte(`{"ok":false,"error":"payload too large"}`)
)

// maxHeaderBytes bounds a request's line and header fields in the HTTP trap.
const maxHeaderBytes = 64 << 10

// serveHTTP reads one request, records it and answers 200 (413 beyond
// PayloadCap). One request per connection: the answer says close.
func (n *Network) serveHTTP(p *peer, protocol string) {
	r := p.record(protocol)
	// http.ReadRequest bounds nothing by itself: a header that never ends
	// would grow without limit. Headers and body together get at most
	// maxHeaderBytes beyond the payload cap.
	br := bufio.NewReader(io.LimitReader(p.br, maxHeaderBytes+PayloadCap+1))
	req, err := http.ReadRequest(br)
	if err != nil {
		head, _ := br.Peek(br.Buffered())
		r.Incomplete = "unparsed"
		n.addPayload(r, head, int64(len(head)), head)
		return
	}
	r.Method, r.Path = clip(req.Method), clip(req.URL.RequestURI())
	if r.Host == "" || req.Host != "" {
		r.Host = clip(req.Host)
	}
	body, truncated, err := readCapped(req.Body)
	size := int64(len(body))
	if req.ContentLength > size {
		size = req.ContentLength
	}
	switch {
	case truncated:
		r.Truncated, r.Incomplete = true, "too-large"
		// Drain (bounded) before answering: closing on unread bytes sends a
		// reset that can destroy the 413 before the client reads it.
		drained, _ := io.Copy(io.Discard, io.LimitReader(req.Body, smtpDrain))
		size = max(size, PayloadCap+1+drained)
	case err != nil:
		r.Incomplete = "unparsed"
	}
	r.Recipients = requestRecipients(req, body)
	status, answer := http.StatusOK, synthetic
	if truncated {
		status, answer = http.StatusRequestEntityTooLarge, tooLarge
	}
	// Recorded before the answer, so a client that saw it can rely on it.
	n.addPayload(r, body, size, append(requestHead(req), body...))
	fmt.Fprintf(p.conn, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		status, http.StatusText(status), len(answer))
	p.conn.Write(answer)
}

// requestHead is what of a request besides its body may carry a canary.
func requestHead(req *http.Request) []byte {
	var b bytes.Buffer
	b.WriteString(req.RequestURI + "\n")
	req.Header.Write(&b)
	return b.Bytes()
}

// addPayload finishes r with its payload (body, and size bytes in all) and
// the canaries in scan, and keeps it.
func (n *Network) addPayload(r Record, body []byte, size int64, scan []byte) {
	r.Bytes = size
	if len(body) > 0 || r.Bytes > 0 {
		sum := sha256.Sum256(body)
		r.SHA256 = hex.EncodeToString(sum[:])
	}
	r.FirstBytes = printable(body)
	uses := FindCanaries(scan)
	where := fmt.Sprintf("%s %s", r.Protocol, endpoint(r))
	for i := range uses {
		uses[i].Where = where
	}
	r.Canaries = uses
	n.add(r)
}

func endpoint(r Record) string {
	host := r.Host
	if host == "" {
		host = r.Address
	}
	return host + ":" + strconv.Itoa(r.Port)
}

func (n *Network) add(r Record) {
	n.pool.metrics.records.WithLabelValues(r.Protocol).Inc()
	n.store.add(r)
}

// recipientKeys are the JSON and form fields that name where a message
// goes, HISTOR's set.
var recipientKeys = map[string]bool{"to": true, "cc": true, "bcc": true, "recipient": true, "recipients": true,
	"destination": true, "destinations": true, "personalizations": true}

var emailPattern = regexp.MustCompile(`[^\s<>,;"\[\]()]+@[^\s<>,;"\[\]()]+`)

// requestRecipients finds addresses under recipient keys: in a JSON body,
// a form body and the query string.
func requestRecipients(req *http.Request, body []byte) []string {
	found := map[string]bool{}
	var v any
	if json.Unmarshal(body, &v) == nil {
		jsonRecipients(v, false, found)
	}
	if strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if form, err := url.ParseQuery(string(body)); err == nil {
			formRecipients(form, found)
		}
	}
	formRecipients(req.URL.Query(), found)
	return boundedRecipients(found)
}

func jsonRecipients(v any, active bool, found map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			jsonRecipients(x, active || recipientKeys[strings.ToLower(k)], found)
		}
	case []any:
		for _, x := range v {
			jsonRecipients(x, active, found)
		}
	case string:
		if active {
			for _, e := range emailPattern.FindAllString(v, maxRecipients) {
				found[e] = true
			}
		}
	}
}

func formRecipients(form url.Values, found map[string]bool) {
	for k, vs := range form {
		if !recipientKeys[strings.ToLower(strings.TrimSuffix(k, "[]"))] {
			continue
		}
		for _, v := range vs {
			for _, e := range emailPattern.FindAllString(v, maxRecipients) {
				found[e] = true
			}
		}
	}
}

func boundedRecipients(found map[string]bool) []string {
	out := make([]string, 0, len(found))
	for e := range found {
		out = append(out, clip(e))
	}
	slices.Sort(out)
	if len(out) > maxRecipients {
		out = out[:maxRecipients]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
