package httpx

import (
	"encoding/json"
	"net/http"
	"strconv"
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
