package guard

import (
	"fmt"
	"net/netip"
)

// special is one address range the crawler never dials, with the name a BlockedError reports.
type special struct {
	prefix netip.Prefix
	reason string
}

// specialV4 lists the IPv4 ranges of the IANA special-purpose registry that are not globally
// reachable, plus multicast and the reserved 240/4. Order matters only for the reported reason:
// the broadcast address is named before the 240/4 that contains it.
var specialV4 = []special{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network (0/8)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private (10/8)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space / CGNAT (100.64/10)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback (127/8)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (169.254/16)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private (172.16/12)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments (192.0.0/24)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation (192.0.2/24)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast (192.88.99/24)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private (192.168/16)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (198.18/15)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation (198.51.100/24)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation (203.0.113/24)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast (224/4)"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (240/4)"},
}

// specialV6 lists IPv6 ranges inside the global unicast block 2000::/3 that are still not
// globally reachable. Everything outside 2000::/3 is refused by isGlobal itself, which covers
// unspecified, loopback, IPv4-compatible, unique-local fc00::/7, link-local fe80::/10,
// site-local, multicast ff00::/8 and segment-routing 5f00::/16 in one rule.
var specialV6 = []special{
	// 2001::/23 holds Teredo (2001::/32, which also embeds an obfuscated IPv4 client) and other
	// protocol assignments; HISTOR refuses the whole block too, so the two observers agree.
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments incl. Teredo (2001::/23)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation (2001:db8::/32)"},
	// 6to4 embeds an IPv4 address that a relay would reach on our behalf; refused whole, as
	// HISTOR does, rather than trusting that the embedded address is public.
	{netip.MustParsePrefix("2002::/16"), "6to4 (2002::/16)"},
	{netip.MustParsePrefix("3fff::/20"), "documentation (3fff::/20)"},
}

var (
	globalUnicastV6 = netip.MustParsePrefix("2000::/3")
	// nat64WellKnown is the RFC 6052 prefix a DNS64 resolver uses on an IPv6-only network; the
	// address behind it is the embedded IPv4 one, so that one is what gets judged.
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")
)

// NonGlobal reports why addr is not a global unicast address the crawler may dial, or "" when it
// is one. IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry, and a NAT64
// address as the IPv4 address it embeds, so neither form can smuggle a private address past
// the check. A zone is ignored: only link-local addresses carry one, and those are refused.
func NonGlobal(addr netip.Addr) string {
	if !addr.IsValid() {
		return "invalid address"
	}
	addr = addr.WithZone("").Unmap()
	if addr.Is4() {
		return classify(addr, specialV4)
	}
	if nat64WellKnown.Contains(addr) {
		b := addr.As16()
		inner := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		if why := classify(inner, specialV4); why != "" {
			return fmt.Sprintf("NAT64 of %s: %s", inner, why)
		}
		return ""
	}
	if !globalUnicastV6.Contains(addr) {
		return "not IPv6 global unicast (outside 2000::/3)"
	}
	return classify(addr, specialV6)
}

func classify(addr netip.Addr, ranges []special) string {
	for _, s := range ranges {
		if s.prefix.Contains(addr) {
			return s.reason
		}
	}
	return ""
}
