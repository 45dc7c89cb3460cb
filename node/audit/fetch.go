package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/histor-observer/histor/log/format"
)

// Bounds on what the auditor reads, so a hostile log cannot make it hold unbounded memory.
const (
	maxJSONBytes       = 1 << 20
	maxCheckpointBytes = format.MaxCheckpointBytes
	maxHashTileBytes   = 256 * 32
	maxBundleBytes     = 256 * (2 + 65535)
)

// get fetches base+path?query and returns the body of a 200 answer of at most limit bytes.
// Anything else is an *IncompleteError: a log that does not answer has not misbehaved yet.
func (a *auditor) get(ctx context.Context, path string, query url.Values, limit int64) ([]byte, error) {
	target := a.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, incomplete("building the request for "+path, err)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, incomplete("fetching "+path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, incomplete("reading "+path, err)
	}
	switch {
	case resp.StatusCode == http.StatusConflict:
		return nil, incomplete("fetching "+path, fmt.Errorf("not yet under a signed tree head; audit again later"))
	case resp.StatusCode != http.StatusOK:
		return nil, incomplete("fetching "+path, newStatusError(resp.StatusCode, body))
	case int64(len(body)) > limit:
		return nil, incomplete("reading "+path, fmt.Errorf("answer larger than %d bytes", limit))
	}
	a.log.Debug("fetched", "path", path, "bytes", len(body))
	return body, nil
}

// getJSON fetches a JSON answer into v.
func (a *auditor) getJSON(ctx context.Context, path string, query url.Values, v any) error {
	body, err := a.get(ctx, path, query, maxJSONBytes)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return incomplete("reading "+path, fmt.Errorf("the answer is not the expected JSON: %w", err))
	}
	return nil
}

// statusError is an answer other than 200, with HISTOR's {"detail": …} when
// the log sent one.
type statusError struct {
	code   int
	detail string
}

func newStatusError(code int, body []byte) *statusError {
	var d struct {
		Detail string `json:"detail"`
	}
	if json.Unmarshal(body, &d) == nil && len(d.Detail) <= 200 {
		return &statusError{code: code, detail: d.Detail}
	}
	return &statusError{code: code}
}

func (e *statusError) Error() string {
	if e.detail == "" {
		return fmt.Sprintf("HTTP %d", e.code)
	}
	return fmt.Sprintf("HTTP %d: %s", e.code, e.detail)
}

// emptyLogDetail is what a HISTOR log answers for its latest head until it
// holds a label: it signs no head over an empty tree.
const emptyLogDetail = "the log is empty"

// isEmptyLog reports whether err is the head route's "the log is empty".
func isEmptyLog(err error) bool {
	var se *statusError
	return errors.As(err, &se) && se.code == http.StatusNotFound && se.detail == emptyLogDetail
}
