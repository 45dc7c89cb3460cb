package guard

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
)

// TestSelf: the node's own listen address, named exactly, passes the guard
// over http; its neighbours, another port, a name for it and every other
// non-global address are still refused.
func TestSelf(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "face") }))
	t.Cleanup(srv.Close)
	self := netip.MustParseAddrPort(srv.Listener.Addr().String())
	g := newGuard(t, Config{})
	g.SetSelf(self)
	own := "http://" + self.String() + "/mcp"
	target, err := g.Check(context.Background(), own)
	if err != nil {
		t.Fatalf("own face refused: %v", err)
	}
	resp, err := g.Client().Get(target.URL.String())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "face" {
		t.Fatalf("read %q from the own face", b)
	}
	other := strconv.Itoa(int(self.Port()) + 1)
	for _, u := range []string{
		"http://127.0.0.1:" + other + "/mcp", // another port on the same address
		"http://localhost:" + strconv.Itoa(int(self.Port())) + "/mcp",
		"http://127.0.0.2:" + strconv.Itoa(int(self.Port())) + "/mcp",
		"https://10.0.0.1/mcp",
		// the other non-global ranges, at the own port
		"http://192.168.1.1:" + strconv.Itoa(int(self.Port())) + "/mcp",
		"http://172.16.0.1:" + strconv.Itoa(int(self.Port())) + "/mcp",
		"http://169.254.169.254/mcp",
		"http://100.64.0.1:" + strconv.Itoa(int(self.Port())) + "/mcp",
		"http://0.0.0.0:" + strconv.Itoa(int(self.Port())) + "/mcp",
		"http://[::1]:" + strconv.Itoa(int(self.Port())) + "/mcp",
		"http://[fd00::1]:" + strconv.Itoa(int(self.Port())) + "/mcp",
		"http://[fe80::1]:" + strconv.Itoa(int(self.Port())) + "/mcp",
		"http://[::ffff:127.0.0.2]:" + strconv.Itoa(int(self.Port())) + "/mcp", // a neighbour, IPv4-mapped
		"http://[::ffff:10.0.0.1]/mcp",
		"http://[::ffff:169.254.169.254]/mcp",
	} {
		_, err := g.Check(context.Background(), u)
		var pe *PolicyError
		var be *BlockedError
		if !errors.As(err, &pe) && !errors.As(err, &be) {
			t.Errorf("%s: %v, want refused", u, err)
		}
	}
	// The own address spelt IPv4-mapped is the same socket, and passes as it does.
	if _, err := g.Check(context.Background(), "http://[::ffff:127.0.0.1]:"+strconv.Itoa(int(self.Port()))+"/mcp"); err != nil {
		t.Errorf("the own address, IPv4-mapped: %v", err)
	}
	// Without Self, the own address is refused like any loopback address.
	if _, err := newGuard(t, Config{}).Check(context.Background(), own); err == nil {
		t.Error("a guard without Self let the loopback face through")
	}
}
