package node

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestReady: Ready is closed once Serve answers, not before, and a request then succeeds.
func TestReady(t *testing.T) {
	nd, err := New(Config{DataDir: t.TempDir(), LogOrigin: "test.example/log"})
	if err != nil {
		t.Fatal(err)
	}
	if err := nd.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nd.Close() })
	select {
	case <-nd.Ready():
		t.Fatal("ready before serving")
	default:
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- nd.Serve(ctx, ln) }()
	select {
	case <-nd.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("not ready 10 s after Serve")
	}
	resp, err := http.Get("http://" + ln.Addr().String() + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/health once ready: %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
