package mcpface_test

import (
	"net"
	"testing"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/node/mcpface"
)

// TestTarget: the own face is reached where it is served, an unspecified
// address over the loopback of its family, and named after the origin.
func TestTarget(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "http://127.0.0.1:8080/mcp"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "http://[::1]:8080/mcp"},
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 80}, "http://192.0.2.1:80/mcp"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 443}, "http://[2001:db8::1]:443/mcp"},
	} {
		got, err := mcpface.Target("observer.example/log", tc.addr)
		if err != nil {
			t.Fatalf("%s: %v", tc.addr, err)
		}
		name := "histor.self/observer.example/log"
		if got.Endpoint != tc.want || got.Name != name || got.ID != mtl.ServerID(name, tc.want) ||
			got.Transport != registry.TransportStreamable || got.Registry != registry.CuratedRegistry {
			t.Errorf("%s: %+v, want endpoint %s", tc.addr, got, tc.want)
		}
	}
	if _, err := mcpface.Target("o", &net.UnixAddr{Name: "sock", Net: "unix"}); err == nil {
		t.Error("a unix socket made a target")
	}
}
