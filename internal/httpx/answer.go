package httpx

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/histor-observer/histor/log/canon"
)

// WriteDetail answers an error the way HISTOR (FastAPI) does: {"detail": "..."}, never
// cached.
func WriteDetail(w http.ResponseWriter, status int, detail string) {
	body, _ := json.Marshal(struct {
		Detail string `json:"detail"`
	}{detail})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(body)
}

// WriteBody answers 200 with body, its type and length set.
func WriteBody(w http.ResponseWriter, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

// StatusWriter remembers the status code a handler answered with.
type StatusWriter struct {
	http.ResponseWriter
	code int
}

func (s *StatusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *StatusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *StatusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Status is the code answered; a handler that wrote nothing answered 200.
func (s *StatusWriter) Status() int {
	if s.code == 0 {
		return http.StatusOK
	}
	return s.code
}

// Internal logs err, with what the handler was doing, and answers 500 without its details.
func Internal(w http.ResponseWriter, r *http.Request, logger *slog.Logger, doing string, err error) {
	logger.Error("serving request", "path", r.URL.Path, "doing", doing, "err", err)
	WriteDetail(w, http.StatusInternalServerError, "internal error")
}

// WriteJSON answers v as JSON without HTML escaping (descriptions and names read as their
// servers wrote them); a value that does not encode is Internal.
func WriteJSON(w http.ResponseWriter, r *http.Request, logger *slog.Logger, v any) {
	body, err := canon.MarshalPlain(v)
	if err != nil {
		Internal(w, r, logger, "encoding answer", err)
		return
	}
	WriteBody(w, "application/json", body)
}

// RetryAfter is a Retry-After value: whole seconds, rounded up, at least 1.
func RetryAfter(d time.Duration) string {
	return strconv.FormatInt(max(1, int64((d+time.Second-1)/time.Second)), 10)
}

// ReadBody reads a request body of at most maxBytes; more is refused with 413 before
// anything beyond the bound is read. On failure status and err are the answer.
func ReadBody(w http.ResponseWriter, r *http.Request, maxBytes int64) (body []byte, status int, err error) {
	tooLarge := fmt.Errorf("body larger than %d bytes", maxBytes)
	if r.ContentLength > maxBytes {
		return nil, http.StatusRequestEntityTooLarge, tooLarge
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &mb):
		return nil, http.StatusRequestEntityTooLarge, tooLarge
	case err != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("reading body: %w", err)
	}
	return raw, 0, nil
}

// ReadJSONObject reads a POST body as HISTOR's read_json does: at most maxBytes (413
// beyond), JSON (the canonical parser's), an object; an empty body is {}. On failure the
// object is nil and status and detail are the answer.
func ReadJSONObject(w http.ResponseWriter, r *http.Request, maxBytes int64) (obj map[string]any, status int, detail string) {
	raw, status, err := ReadBody(w, r, maxBytes)
	if err != nil {
		return nil, status, err.Error()
	}
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	v, err := canon.ParseWith(raw, canon.Limits{MaxDepth: canon.DefaultLimits.MaxDepth, MaxBytes: int(maxBytes)})
	if err != nil {
		return nil, http.StatusBadRequest, "body is not JSON"
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, http.StatusBadRequest, "body must be a JSON object"
	}
	return m, 0, ""
}

// CacheImmutable is the Cache-Control of anything addressed by content or by a position that
// can never change (labels, evidence, full tiles, proofs between fixed sizes).
const CacheImmutable = "public, max-age=31536000, immutable"
