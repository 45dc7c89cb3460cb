package demo_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestDemoBinary runs the built `histor demo`: all three observers answer /health within
// 10 s of the start, the changing server has a change record on every observer, the
// two-faced server is in a split view on observer 1 (agreement.status "split" on its
// /api/v1/servers/<id>), observer 1's /log/checkpoint carries the other two's cosignatures,
// and SIGINT stops the demo with exit 0.
func TestDemoBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the histor binary with three observers for several seconds; skipped under -short")
	}
	bin := filepath.Join(t.TempDir(), "histor")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/histor-observer/histor/cmd/histor").CombinedOutput(); err != nil {
		t.Fatalf("building histor: %v\n%s", err, out)
	}
	base := freeBase(t)
	var stdout, stderr lockedBuffer
	cmd := exec.Command(bin, "demo", "--data", t.TempDir(), "--http-base", fmt.Sprint(base), "--interval", "2s")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	})
	urls := []string{}
	for i := range 3 {
		urls = append(urls, fmt.Sprintf("http://127.0.0.1:%d", base+i))
	}
	for _, u := range urls {
		waitFor(t, done, started.Add(30*time.Second), "/health of "+u, func() bool { return status(u+"/health") == http.StatusOK })
	}
	// The guide is printed once every observer is ready, just after /health answers.
	waitFor(t, done, started.Add(30*time.Second), "the guide", func() bool { return strings.Contains(stdout.String(), "Ctrl-C") })
	for _, want := range []string{urls[0] + "/api/v1/changes", "state=split", "/log/checkpoint"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the guide does not point at %s:\n%s", want, stdout.String())
		}
	}
	for _, u := range urls {
		waitFor(t, done, time.Now().Add(30*time.Second), "a change of the changing server on "+u, func() bool {
			return hasChange(u, "io.histor.demo/changing")
		})
		if hasChange(u, "io.histor.demo/steady") {
			t.Errorf("%s records a change of the steady server", u)
		}
	}
	id := serverID(t, urls[0], "io.histor.demo/two-faced")
	waitFor(t, done, time.Now().Add(30*time.Second), "a split view of the two-faced server on "+urls[0], func() bool {
		return agreement(urls[0], id) == "split"
	})
	t.Logf("split view visible on observer 1 %s after the start", time.Since(started).Round(100*time.Millisecond))
	if feed := body(urls[0] + "/feed.xml"); !strings.Contains(feed, "io.histor.demo/two-faced: observers saw different tool definitions") {
		t.Errorf("observer 1's feed has no entry for the split view:\n%s", feed)
	}
	for _, w := range []string{"observer-2.histor.demo/witness", "observer-3.histor.demo/witness"} {
		waitFor(t, done, time.Now().Add(30*time.Second), "a cosignature by "+w+" on observer 1's checkpoint", func() bool {
			return cosignedBy(urls[0], w)
		})
	}
	t.Logf("observer 1's checkpoint cosigned by both peers %s after the start", time.Since(started).Round(100*time.Millisecond))
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("demo exited with %v after SIGINT\nstderr: %s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("demo did not stop on SIGINT")
	}
	if !strings.Contains(stdout.String(), "stopped") {
		t.Errorf("no word of stopping:\n%s", stdout.String())
	}
}

// freeBase finds a port with the ports the demo takes above it free: the next two, the three
// libp2p ports 100 above and the four fixture ports 200 above.
func freeBase(t *testing.T) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if base+203 < 65535 && free(base, base+1, base+2, base+100, base+101, base+102, base+200, base+201, base+202, base+203) {
			return base
		}
	}
	t.Fatal("no free ports")
	return 0
}

// free reports whether each port is free for TCP and for UDP (libp2p's
// QUIC listens on the UDP port of the same number).
func free(ports ...int) bool {
	for _, p := range ports {
		addr := fmt.Sprintf("127.0.0.1:%d", p)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return false
		}
		ln.Close()
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return false
		}
		pc.Close()
	}
	return true
}

// waitFor polls ok until it holds, the deadline passes or the demo exits.
func waitFor(t *testing.T, done chan error, deadline time.Time, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("demo exited (%v) while waiting for %s", err, what)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in time", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func hasChange(base, name string) bool {
	resp, err := http.Get(base + "/api/v1/changes")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var page struct {
		Changes []struct {
			Name string `json:"name"`
		} `json:"changes"`
	}
	if json.Unmarshal(b, &page) != nil {
		return false
	}
	for _, c := range page.Changes {
		if c.Name == name {
			return true
		}
	}
	return false
}

// serverID finds a server's id on an observer by its name.
func serverID(t *testing.T, base, name string) string {
	t.Helper()
	var page struct {
		Servers []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"servers"`
	}
	if err := getJSON(base+"/api/v1/servers?limit=200", &page); err != nil {
		t.Fatal(err)
	}
	for _, s := range page.Servers {
		if s.Name == name {
			return s.ID
		}
	}
	t.Fatalf("%s does not list %s", base, name)
	return ""
}

func agreement(base, id string) string {
	var page struct {
		Agreement struct {
			Status string `json:"status"`
		} `json:"agreement"`
	}
	if getJSON(base+"/api/v1/servers/"+id, &page) != nil {
		return ""
	}
	return page.Agreement.Status
}

// cosignedBy reports whether the checkpoint an observer serves carries a signature line
// of the witness key name.
func cosignedBy(base, name string) bool {
	resp, err := http.Get(base + "/log/checkpoint")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return strings.Contains(string(b), "\n\u2014 "+name+" ")
}

func body(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return string(b)
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(v)
}

// lockedBuffer is a bytes.Buffer the demo's output is copied into while the test reads it.
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
