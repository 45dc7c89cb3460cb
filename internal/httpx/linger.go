// Package httpx holds small pieces of HTTP serving that several parts of the node share.
package httpx

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// Linger is the bound on reading what a handler left unread of a request body.
type Linger struct {
	// MaxBytes is the most that is read and discarded after the handler; a body with more
	// left is abandoned (the connection closes, and a client still writing meets a reset).
	MaxBytes int64
	// Timeout bounds the discarding: a client that stalls is abandoned after it.
	Timeout time.Duration
}

// Handler reads and discards, within the bound, whatever part of the request body h left
// unread, after h's answer is flushed, as nginx's lingering close does. A client that writes
// its whole body before it reads (Python's urllib) otherwise meets a connection reset in place
// of the 413 it was sent: Go's server closes a connection with more than 256 KiB unread, and
// the bytes still arriving make the kernel reset it. A client that asked for 100-continue is
// never drained: it was not sent the go-ahead, so it sends nothing more.
func (l Linger) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server keeps its own request and inspects its body after h; h gets a copy.
		body := &eofReader{r: r.Body}
		inner := r.WithContext(r.Context())
		inner.Body = body
		h.ServeHTTP(w, inner)
		if body.eof || r.ContentLength == 0 || strings.Contains(strings.ToLower(r.Header.Get("Expect")), "100-continue") {
			return
		}
		if r.ContentLength > 0 && r.ContentLength-body.n > l.MaxBytes {
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.Flush(); err != nil {
			return
		}
		rc.SetReadDeadline(time.Now().Add(l.Timeout))
		io.CopyN(io.Discard, body.r, l.MaxBytes)
	})
}

// eofReader notes how much of a body was read and whether to its end.
type eofReader struct {
	r   io.ReadCloser
	n   int64
	eof bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.n += int64(n)
	if errors.Is(err, io.EOF) {
		e.eof = true
	}
	return n, err
}

func (e *eofReader) Close() error { return e.r.Close() }
