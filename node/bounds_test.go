package node

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startServing serves a fresh node configured by cfg on loopback and returns
// its address; the node stops when the test ends.
func startServing(t *testing.T, cfg Config) string {
	t.Helper()
	return startServingNode(t, cfg).addr
}

type servingNode struct {
	node *Node
	addr string
}

// startServingNode is startServing, also returning the node.
func startServingNode(t *testing.T, cfg Config) servingNode {
	t.Helper()
	cfg.DataDir = t.TempDir()
	nd, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := nd.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { nd.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done; nd.Close() })
	return servingNode{node: nd, addr: ln.Addr().String()}
}

// getBody GETs url and returns the response and its whole body.
func getBody(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestMaxHeaderBytes(t *testing.T) {
	addr := startServing(t, Config{MaxHeaderBytes: 1024})
	req, _ := http.NewRequest("GET", "http://"+addr+"/health", nil)
	// net/http allows 4096 bytes of slack over MaxHeaderBytes.
	req.Header.Set("X-Big", strings.Repeat("a", 1024+4096+1))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("oversized header: status %d, want 431", resp.StatusCode)
	}
	resp, err = http.Get("http://" + addr + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("small header refused: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestReadHeaderTimeout: a client that never finishes its header is cut off.
func TestReadHeaderTimeout(t *testing.T) {
	addr := startServing(t, Config{ReadHeaderTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /health HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		// Some versions answer 408 before closing; either way the request is not served.
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("unfinished header answered %d", resp.StatusCode)
		}
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Fatalf("connection held for %v with ReadHeaderTimeout 200ms", waited)
	}
}

// TestOversizedCheckBodyIsAnswered: a client that writes a 3 MiB check body in full before it
// reads, as Python's urllib does, reads the 413, from the API's /api/v1/check and the desk's
// /check, with the body announced (Content-Length) and not (chunked). Go's server alone resets
// such a connection.
func TestOversizedCheckBodyIsAnswered(t *testing.T) {
	addr := startServing(t, Config{})
	fill := bytes.Repeat([]byte("a"), 3<<20)
	bodies := map[string]struct {
		ctype string
		body  []byte
	}{
		"/api/v1/check": {"application/json", append(append([]byte(`{"endpoint":"https://x.test/mcp","tools":"`), fill...), `"}`...)},
		"/check":        {"application/x-www-form-urlencoded", append([]byte("endpoint=https%3A%2F%2Fx.test%2Fmcp&tools="), fill...)},
	}
	for path, b := range bodies {
		var chunked bytes.Buffer
		for off := 0; off < len(b.body); off += 64 << 10 {
			piece := b.body[off:min(off+64<<10, len(b.body))]
			fmt.Fprintf(&chunked, "%x\r\n%s\r\n", len(piece), piece)
		}
		chunked.WriteString("0\r\n\r\n")
		head := "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Type: " + b.ctype + "\r\n"
		for name, req := range map[string][]byte{
			"content-length": append(fmt.Appendf(nil, "%sContent-Length: %d\r\n\r\n", head, len(b.body)), b.body...),
			"chunked":        append([]byte(head+"Transfer-Encoding: chunked\r\n\r\n"), chunked.Bytes()...),
		} {
			if status, err := writeAllThenRead(addr, req); err != nil || status != http.StatusRequestEntityTooLarge {
				t.Errorf("%s, %s: status %d, %v; want 413", path, name, status, err)
			}
		}
	}
}

// writeAllThenRead writes req whole, in 64 KiB pieces over about a second as over a real
// network (Go's server gives a closing connection 500 ms before it resets it), then reads the
// answer's status.
func writeAllThenRead(addr string, req []byte) (int, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	for off := 0; off < len(req); off += 64 << 10 {
		if _, err := conn.Write(req[off:min(off+64<<10, len(req))]); err != nil {
			return 0, fmt.Errorf("writing the body: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, fmt.Errorf("reading the answer: %w", err)
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
