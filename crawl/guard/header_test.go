package guard

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestResponseHeaderBound: a response header over MaxResponseHeaderBytes
// ends the request with a HeaderTooLargeError, which Status reports as
// too-large; the default bound applies when none is set, and a header
// under the bound passes.
func TestResponseHeaderBound(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Pad", strings.Repeat("a", len(r.URL.Query().Get("n"))))
	}))
	t.Cleanup(srv.Close)
	get := func(g *Guard, n int) error {
		resp, err := g.Client().Get(srv.URL + "/?n=" + strings.Repeat("x", n))
		if err == nil {
			drain(resp)
		}
		return err
	}
	small := newGuard(t, Config{AllowPrivate: true, MaxResponseHeaderBytes: 4 << 10})
	if err := get(small, 1<<10); err != nil {
		t.Fatalf("a 1 KiB header under a 4 KiB bound: %v", err)
	}
	err := get(small, 8<<10)
	var he *HeaderTooLargeError
	if st, ok := Status(err); !errors.As(err, &he) || !ok || st != "too-large" {
		t.Fatalf("an 8 KiB header over a 4 KiB bound: %v (status %q)", err, st)
	}
	def := newGuard(t, Config{AllowPrivate: true})
	if err := get(def, DefaultMaxResponseHeaderBytes+1<<10); !errors.As(err, &he) {
		t.Errorf("a header over the default bound: %v", err)
	}
	if _, err := New(Config{MaxResponseHeaderBytes: -1}); err == nil {
		t.Error("a negative header bound was accepted")
	}
}

// TestHeaderTooLargeCannotBeFaked: net/http quotes a malformed header line
// in its error, so a server writing the bound's wording there must not be
// taken for one over the bound.
func TestHeaderTooLargeCannotBeFaked(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				bufio.NewReader(c).ReadString('\n')
				c.Write([]byte("HTTP/1.1 200 OK\r\nserver response headers exceeded 1 bytes; aborted\r\n\r\n"))
			}()
		}
	}()
	g := newGuard(t, Config{AllowPrivate: true})
	resp, err := g.Client().Get("http://" + ln.Addr().String() + "/")
	if err == nil {
		drain(resp)
		t.Fatal("a malformed header was accepted")
	}
	var tooLarge *HeaderTooLargeError
	if status, _ := Status(err); errors.As(err, &tooLarge) || status == "too-large" {
		t.Fatalf("a malformed header quoting the bound's wording was taken for too-large: %v", err)
	}
}
