package httpx

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const limit = 2 << 20

// tooLarge reads at most limit bytes and answers 413 beyond, as /check does.
var tooLarge = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > limit {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	if _, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit)); err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	w.WriteHeader(http.StatusNoContent)
})

// serve runs h behind l on a real loopback server; done receives once per request served.
func serve(t *testing.T, l Linger, h http.Handler) (string, chan struct{}) {
	t.Helper()
	done := make(chan struct{}, 8)
	inner := l.Handler(h)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r)
		done <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), done
}

// postAllThenRead writes the whole request, headers and body, before it reads a byte of the
// answer, as Python's urllib does, and returns the status line it reads. It writes the body in
// 64 KiB pieces over about a second, as a client on a real network would: Go's server gives a
// closing connection 500 ms before it resets it.
func postAllThenRead(t *testing.T, addr string, head string, body []byte) (string, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, head); err != nil {
		return "", fmt.Errorf("writing: %w", err)
	}
	for off := 0; off < len(body); off += 64 << 10 {
		if _, err := c.Write(body[off:min(off+64<<10, len(body))]); err != nil {
			return "", fmt.Errorf("writing: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("reading: %w", err)
	}
	return strings.TrimSpace(line), nil
}

func TestLingerDeliversThe413(t *testing.T) {
	addr, _ := serve(t, Linger{MaxBytes: 16 << 20, Timeout: 5 * time.Second}, tooLarge)
	body := bytes.Repeat([]byte("x"), 3<<20)
	head := fmt.Sprintf("POST /check HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	line, err := postAllThenRead(t, addr, head, body)
	if err != nil || line != "HTTP/1.1 413 Request Entity Too Large" {
		t.Errorf("Content-Length body: %q, %v; want the 413", line, err)
	}
	var chunked bytes.Buffer
	for off := 0; off < len(body); off += 64 << 10 {
		fmt.Fprintf(&chunked, "%x\r\n%s\r\n", 64<<10, body[off:off+64<<10])
	}
	chunked.WriteString("0\r\n\r\n")
	line, err = postAllThenRead(t, addr, "POST /check HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n", chunked.Bytes())
	if err != nil || line != "HTTP/1.1 413 Request Entity Too Large" {
		t.Errorf("chunked body: %q, %v; want the 413", line, err)
	}
}

// TestLingerWithoutIt is the control: the same client without lingering meets a broken pipe
// or a reset, so the test above exercises what it claims to.
func TestLingerWithoutIt(t *testing.T) {
	addr, _ := serve(t, Linger{MaxBytes: 0, Timeout: time.Second}, tooLarge)
	body := bytes.Repeat([]byte("x"), 3<<20)
	line, err := postAllThenRead(t, addr, fmt.Sprintf("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n", len(body)), body)
	if err == nil {
		t.Errorf("without lingering the client read %q: the case above is not the one urllib meets", line)
	}
	t.Logf("without lingering: %v", err)
}

// TestLingerBounds: a body whose rest is beyond MaxBytes is not read, and a client that
// stalls holds the handler no longer than Timeout.
func TestLingerBounds(t *testing.T) {
	addr, done := serve(t, Linger{MaxBytes: 4 << 20, Timeout: 300 * time.Millisecond}, tooLarge)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Announces 3 MiB, sends 2.5 and stalls: within MaxBytes, so drained until the timeout.
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n", 3<<20)
	c.Write(bytes.Repeat([]byte("x"), 5<<19))
	start := time.Now()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a stalled client held the handler past the linger timeout")
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("handler returned after %v: it did not linger", took)
	}

	// Announces 64 MiB: far beyond MaxBytes, abandoned at once.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	fmt.Fprintf(c2, "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n", 64<<20)
	c2.Write(bytes.Repeat([]byte("x"), 5<<19))
	start = time.Now()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a body beyond the bound was drained")
	}
	if took := time.Since(start); took > 250*time.Millisecond {
		t.Errorf("a body beyond the bound held the handler %v", took)
	}
}

// TestLingerSkipsContinue: a client that asked for 100-continue is answered at once.
func TestLingerSkipsContinue(t *testing.T) {
	addr, done := serve(t, Linger{MaxBytes: 16 << 20, Timeout: 5 * time.Second}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusRequestEntityTooLarge)
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", 3<<20)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 413") {
		t.Fatalf("%q, %v", line, err)
	}
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Error("the handler waited for a body the client was never asked for")
	}
}
