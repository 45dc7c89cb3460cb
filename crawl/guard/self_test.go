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
	} {
		_, err := g.Check(context.Background(), u)
		var pe *PolicyError
		var be *BlockedError
		if !errors.As(err, &pe) && !errors.As(err, &be) {
			t.Errorf("%s: %v, want refused", u, err)
		}
	}
	// Without Self, the own address is refused like any loopback address.
	if _, err := newGuard(t, Config{}).Check(context.Background(), own); err == nil {
		t.Error("a guard without Self let the loopback face through")
	}
}
