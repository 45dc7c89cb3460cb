package node

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	hlog "github.com/histor-observer/histor/log"
)

// TestRunLifecycle starts a node on a fresh directory over a real socket,
// reads its size-0 head, stops it, and starts it again with the same seed.
func TestRunLifecycle(t *testing.T) {
	dir := t.TempDir()
	first := serveOnce(t, Config{DataDir: dir})
	info, err := os.Stat(filepath.Join(dir, "seed"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("seed mode %v, want 0600", info.Mode().Perm())
	}
	second := serveOnce(t, Config{DataDir: dir})
	if first != second {
		t.Fatalf("did changed across restarts: %s then %s", first, second)
	}
}

// serveOnce runs a node until its head has been read, and returns its did.
func serveOnce(t *testing.T, cfg Config) string {
	t.Helper()
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
	done := make(chan error, 1)
	go func() { done <- nd.Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/api/v1/log/sth")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// A new log has no entries, so no JSON head, as HISTOR.
	var detail struct {
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(body, &detail); err != nil || resp.StatusCode != http.StatusNotFound || detail.Detail != "the log is empty" {
		t.Fatalf("head of a new log: %d %s (%v)", resp.StatusCode, body, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve returned %v after its context ended", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if err := nd.Close(); err != nil {
		t.Fatal(err)
	}
	return nd.DID()
}

func TestRunRefusesBadAddress(t *testing.T) {
	nd, err := New(Config{DataDir: t.TempDir(), HTTPAddr: "256.0.0.1:99999"})
	if err != nil {
		t.Fatal(err)
	}
	if err := nd.Run(context.Background()); err == nil {
		t.Fatal("Run listened on an impossible address")
	}
}

func TestServeBeforeOpen(t *testing.T) {
	nd, err := New(Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := nd.Serve(context.Background(), ln); err == nil {
		t.Fatal("Serve ran without an open log")
	}
}

// TestRefusesLooseSeed: a seed others can read is not a secret any more.
func TestRefusesLooseSeed(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed")
	if err := os.WriteFile(seed, make([]byte, 32), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{DataDir: dir}); err == nil {
		t.Fatal("New accepted a world-readable seed")
	}
}

// TestRefusesCorruptLog: a damaged data directory stops the node before it
// listens or signs anything.
func TestRefusesCorruptLog(t *testing.T) {
	dir := t.TempDir()
	serveOnce(t, Config{DataDir: dir})
	nd, err := New(Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	current := filepath.Join(nd.LogDir(), "CURRENT")
	if err := os.WriteFile(current, []byte("MANIFEST-999999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = nd.Run(ctx)
	var ce *hlog.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("Run over a corrupt log: %v, want a *log.CorruptError", err)
	}
	t.Logf("refused as expected: %v", err)
}
