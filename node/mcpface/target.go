package mcpface

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/log/mtl"
)

// Target is the node's own face as a crawl target: served on addr (an
// unspecified address is reached over loopback) at /mcp, named in histor's
// own registry namespace after the log's origin.
func Target(origin string, addr net.Addr) (registry.Target, error) {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return registry.Target{}, fmt.Errorf("own face on %s: %w", addr, err)
	}
	ip := ap.Addr().Unmap()
	if ip.IsUnspecified() {
		ip = netip.MustParseAddr("127.0.0.1")
		if ap.Addr().Is6() && !ap.Addr().Is4In6() {
			ip = netip.IPv6Loopback()
		}
	}
	endpoint := "http://" + netip.AddrPortFrom(ip, ap.Port()).String() + "/mcp"
	name := "histor.self/" + origin
	return registry.Target{
		ID: mtl.ServerID(name, endpoint), Name: name, Title: "This observer's own MCP face",
		Endpoint: endpoint, Transport: registry.TransportStreamable,
		RegistryStatus: registry.StatusActive, Registry: registry.CuratedRegistry,
	}, nil
}
