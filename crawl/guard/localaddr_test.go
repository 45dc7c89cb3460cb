package guard

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"testing"
)

// TestLocalAddr: with LocalAddr set, the server sees every connection come from it.
func TestLocalAddr(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux routes all of 127.0.0.0/8 to loopback without setup")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		io.WriteString(w, host)
	}))
	t.Cleanup(srv.Close)
	for _, from := range []string{"127.0.0.2", "127.0.0.3"} {
		g := newGuard(t, Config{AllowPrivate: true, LocalAddr: netip.MustParseAddr(from)})
		resp, err := g.Client().Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != from {
			t.Errorf("dialled from %s, want %s", b, from)
		}
	}
}
