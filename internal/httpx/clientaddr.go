package httpx

import (
	"net/http"
	"net/netip"
	"strings"
)

// ClientKey is what per-client limits count against: an IPv4 address, or
// the /64 an IPv6 address is in (one subscriber is routinely given a whole
// /64, so counting single IPv6 addresses would be no limit at all).
type ClientKey = netip.Prefix

// KeyOf returns the limit key of addr.
func KeyOf(addr netip.Addr) ClientKey {
	addr = addr.Unmap()
	if addr.Is4() {
		return netip.PrefixFrom(addr, 32)
	}
	p, _ := addr.WithZone("").Prefix(64)
	return p
}

// ClientAddr returns the address a request comes from. The peer of the
// connection is the client unless it is one of the trusted proxies; then
// X-Forwarded-For is read from the right, skipping trusted hops, and the
// first untrusted hop is the client (every hop to its left could have been
// written by that client). An unparseable hop ends the walk at the trusted
// hop that reported it. ok is false when the peer address is unparseable,
// which net/http's own listeners never produce.
func ClientAddr(r *http.Request, trusted []netip.Prefix) (addr netip.Addr, ok bool) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	addr = ap.Addr().Unmap()
	if !isTrusted(addr, trusted) {
		return addr, true
	}
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		list := hops[i]
		for list != "" {
			var hop string
			if j := strings.LastIndexByte(list, ','); j >= 0 {
				list, hop = list[:j], list[j+1:]
			} else {
				list, hop = "", list
			}
			next, err := parseHop(hop)
			if err != nil {
				return addr, true
			}
			addr = next
			if !isTrusted(addr, trusted) {
				return addr, true
			}
		}
	}
	return addr, true
}

// parseHop reads one X-Forwarded-For element: an address, optionally with
// a port (some proxies write "[2001:db8::1]:443" or "192.0.2.1:80").
func parseHop(s string) (netip.Addr, error) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.Addr{}, err
	}
	return ap.Addr().Unmap(), nil
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
