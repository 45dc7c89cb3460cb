package node

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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

// TestMaxEntriesConfigured: a smaller MaxEntries is the bound served.
func TestMaxEntriesConfigured(t *testing.T) {
	tn := newTestNode(t, 50)
	cfg := tn.node.cfg
	cfg.MaxEntries = 7
	srv := httptest.NewServer(newAPI(tn.node.Log(), tn.node.id.issuerDoc, cfg))
	defer srv.Close()
	small := &testNode{node: tn.node, srv: srv}
	_, body := small.get(t, "/api/v1/log/entries?start=0&end=50")
	if c := strings.Count(string(body), `"leaf_index"`); c != 7 {
		t.Fatalf("%d entries with MaxEntries 7: %s", c, body)
	}
	_, body = small.get(t, "/api/v1/log/entries?start=45&end=50")
	if c := strings.Count(string(body), `"leaf_index"`); c != 5 || !strings.Contains(string(body), `"leaf_index":49`) {
		t.Fatalf("entries 45..50: %s", body)
	}
}
