package node

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMaxInFlight: with every slot taken, a request is answered 503 at once
// with Retry-After and a HISTOR-style detail; a freed slot serves again.
func TestMaxInFlight(t *testing.T) {
	var logs lockedBuffer
	addr := startServingNode(t, Config{MaxInFlight: 2, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	nd := addr.node
	for range cap(nd.slots) {
		nd.slots <- struct{}{} // two requests in flight
	}
	start := time.Now()
	resp, body := getBody(t, "http://"+addr.addr+"/api/v1/log/sth")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("with every slot taken: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	var detail struct{ Detail string }
	if err := json.Unmarshal(body, &detail); err != nil || !strings.Contains(detail.Detail, "busy") {
		t.Fatalf("busy answer %q: %v", body, err)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Fatalf("a request beyond the bound waited %v instead of being refused at once", waited)
	}
	getBody(t, "http://"+addr.addr+"/api/v1/log/sth") // refused too, logged later as a count
	if resp, _ := getBody(t, "http://"+addr.addr+"/health"); resp.StatusCode != http.StatusOK {
		t.Fatalf("/health while busy: %d, want 200 (liveness probes must get through)", resp.StatusCode)
	}
	if got := strings.Count(logs.String(), `"msg":"requests refused: busy","refused":1,"max_in_flight":2`); got != 1 {
		t.Fatalf("want the first refusal logged once, at once: %s", logs.String())
	}
	<-nd.slots
	if resp, _ := getBody(t, "http://"+addr.addr+"/log/checkpoint"); resp.StatusCode != http.StatusOK {
		t.Fatalf("with a slot free: %d", resp.StatusCode)
	}
	<-nd.slots
}

// TestCloseWaitsForRequests: Close does not close the log under a request
// still using it, and answers 503 to requests after it.
func TestCloseWaitsForRequests(t *testing.T) {
	s := startServingNode(t, Config{})
	nd := s.node
	nd.serving.RLock() // a request in flight
	closed := make(chan error, 1)
	go func() { closed <- nd.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a request was in flight", err)
	case <-time.After(200 * time.Millisecond):
	}
	if nd.api.Load() == nil {
		t.Fatal("the API went away under a request in flight")
	}
	nd.serving.RUnlock()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return once the request finished")
	}
	resp, body := getBody(t, "http://"+s.addr+"/api/v1/log/sth")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "log not open") {
		t.Fatalf("after Close: %d %s", resp.StatusCode, body)
	}
}

func TestMaxInFlightValidated(t *testing.T) {
	for _, n := range []int{-1, MaxMaxInFlight + 1} {
		c := Config{DataDir: t.TempDir(), MaxInFlight: n}
		if err := c.Validate(); err == nil {
			t.Errorf("MaxInFlight %d accepted", n)
		}
	}
	c := Config{DataDir: t.TempDir()}
	if err := c.Validate(); err != nil || c.MaxInFlight != DefaultMaxInFlight {
		t.Fatalf("default MaxInFlight %d, %v", c.MaxInFlight, err)
	}
}

// lockedBuffer is a log sink the test can read while the server writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
