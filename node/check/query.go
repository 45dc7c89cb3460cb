package check

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/mtl"
)

// Bounds of a /check request, HISTOR's.
const (
	// MaxBodyBytes bounds a request body; a body beyond it is answered 413.
	MaxBodyBytes = 2 << 20
	// MaxTextChars bounds the endpoint and the name, in characters.
	MaxTextChars  = 2000
	maxCheckTools = mcpclient.DefaultMaxTools
)

// Query is one parsed /check request.
type Query struct {
	endpoint, name string // as sent; "" when absent
	// digest is the client's tool-set digest, computed from tools or sent
	// as toolSetDigest; "" when neither gave one.
	digest string
	// entries are the client's tools as MTL/1 normalises them (what a scan
	// reads); nil unless tools were sent and digested.
	entries []any
	// digestErr says why the tools sent have no digest; nil otherwise.
	digestErr  map[string]any
	contribute bool
}

// ParseQuery reads a body with the strict canonical parser: the tools are
// digested from the client's exact JSON, as MTL/1 requires, so a number the
// profile refuses is an undigestible set rather than a rounded one. Its
// errors are the 400 details a caller answers with.
func ParseQuery(raw []byte) (*Query, error) {
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	v, err := canon.ParseDeferringNumbers(raw, canon.Limits{MaxDepth: canon.DefaultLimits.MaxDepth, MaxBytes: MaxBodyBytes})
	if err != nil {
		return nil, fmt.Errorf("body is not JSON the canonical parser accepts: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("body must be a JSON object")
	}
	q := &Query{}
	if q.endpoint, err = checkText(m, "endpoint"); err != nil {
		return nil, err
	}
	if q.name, err = checkText(m, "name"); err != nil {
		return nil, err
	}
	if q.endpoint == "" && q.name == "" {
		return nil, errors.New("send endpoint or name")
	}
	if err := q.readTools(m); err != nil {
		return nil, err
	}
	q.contribute = m["contribute"] == true
	return q, nil
}

// checkText reads an optional string member; null counts as absent.
func checkText(m map[string]any, field string) (string, error) {
	v, ok := m[field]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok || strings.IndexByte(s, 0) >= 0 || utf8.RuneCountInString(s) > MaxTextChars {
		return "", fmt.Errorf("%s must be a string of at most %d characters", field, MaxTextChars)
	}
	return s, nil
}

// readTools takes the client's digest from tools (digested exactly as the
// crawl digests a tools/list result) or else from toolSetDigest.
func (q *Query) readTools(m map[string]any) error {
	if v := m["tools"]; v != nil {
		tools, ok := v.([]any)
		if !ok {
			return errors.New("tools must be the tools array of a tools/list result")
		}
		if len(tools) > maxCheckTools {
			return fmt.Errorf("more than %d tools", maxCheckTools)
		}
		return q.digestTools(tools)
	}
	if v := m["toolSetDigest"]; v != nil {
		d, ok := v.(string)
		if !ok || !mtl.ValidSRI(d) {
			return errors.New("toolSetDigest must be an MTL/1 tool-set digest (sha256-<base64>)")
		}
		q.digest = d
	}
	return nil
}

func (q *Query) digestTools(tools []any) error {
	canonical, err := mtl.CanonicalToolSet(tools)
	var refusal *mtl.Refusal
	switch {
	case errors.As(err, &refusal):
		q.digestErr = map[string]any{"code": refusal.Code, "detail": refusal.Reason}
		return nil
	case err != nil:
		return fmt.Errorf("digesting tools: %w", err)
	}
	q.digest = mtl.SRI(canonical)
	// Normalize succeeded inside CanonicalToolSet, so it cannot fail here.
	q.entries, _ = mtl.Normalize(tools)
	return nil
}
