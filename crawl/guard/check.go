package guard

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// hostProfile maps a host name the way a browser's lookup does (UTS #46, non-transitional,
// hyphen and joiner checks, bidi rule, DNS lengths). STD3 rules stay off so an underscore,
// which HISTOR accepts, is not refused here; asciiHost then allows only LDH and underscore.
var hostProfile = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.BidiRule(),
	idna.ValidateLabels(true),
	idna.CheckHyphens(true),
	idna.CheckJoiners(true),
	idna.StrictDomainName(false),
	idna.VerifyDNSLength(true),
)

// Check parses rawURL, applies the policy, resolves the host once and pins the chosen address
// for the client. Call it once per observation: a later Check of the same host re-resolves
// and replaces the pin, so a long-running node follows DNS changes between crawls.
func (g *Guard) Check(ctx context.Context, rawURL string) (*Target, error) {
	if strings.ContainsAny(rawURL, "{}") {
		return nil, ErrTemplatedURL
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, &PolicyError{URL: rawURL, Reason: "does not parse: " + err.Error()}
	}
	host, port, err := g.policy(u, rawURL)
	if err != nil {
		return nil, err
	}
	ap, err := g.resolve(ctx, host, port)
	if err != nil {
		return nil, err
	}
	out := *u
	out.Host = urlHost(host, u.Port())
	return &Target{URL: &out, Host: host, Addr: ap}, nil
}

// policy applies every rule that needs no lookup and returns the host in its ASCII form with
// the effective port.
func (g *Guard) policy(u *url.URL, raw string) (string, uint16, error) {
	refuse := func(reason string) (string, uint16, error) {
		return "", 0, &PolicyError{URL: raw, Reason: reason}
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme == "https":
	case scheme == "http" && g.cfg.AllowPrivate:
	case scheme == "http" && g.isSelf(u):
	case scheme == "http":
		// Tool definitions over cleartext can be rewritten by anyone on the path, so what we
		// saw would not be an observation of the server.
		return refuse("cleartext http is not observed")
	default:
		return refuse("scheme " + strconv.Quote(u.Scheme) + " is not dialled")
	}
	if u.User != nil {
		return refuse("userinfo in the URL")
	}
	if u.Opaque != "" || u.Host == "" {
		return refuse("no host")
	}
	port, err := effectivePort(u.Port(), scheme)
	if err != nil {
		return refuse(err.Error())
	}
	host, err := asciiHost(u.Hostname())
	if err != nil {
		return refuse(err.Error())
	}
	return host, port, nil
}

type policyReason string

func (r policyReason) Error() string { return string(r) }

func effectivePort(p, scheme string) (uint16, error) {
	if p == "" {
		if scheme == "https" {
			return 443, nil
		}
		return 80, nil
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return 0, policyReason("port " + strconv.Quote(p) + " is not in 1..65535")
	}
	return uint16(n), nil
}

// HostKey is the name the guard bounds connections by for a URL's host (url.URL.Hostname): an
// IP literal as written, a name in IDNA ASCII by the guard's own profile, lower case, without a
// trailing dot. A scheduler that keys hosts by it shares a host's slots exactly as the guard
// does; an error means the guard refuses the host.
func HostKey(hostname string) (string, error) { return asciiHost(hostname) }

// asciiHost returns the host as it goes on the wire: an IP literal unchanged (without zone),
// a name in IDNA ASCII, lower case, without a trailing dot.
func asciiHost(h string) (string, error) {
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", policyReason("IP literal with a zone")
		}
		// Kept as written (lower case) so it matches the dial address the transport derives
		// from the same URL.
		return strings.ToLower(h), nil
	}
	if !utf8.ValidString(h) {
		return "", policyReason("host " + strconv.Quote(h) + " is not valid UTF-8")
	}
	name, err := hostProfile.ToASCII(strings.TrimSuffix(h, "."))
	if err == nil {
		// The ASCII form must itself be a valid name that maps to itself, or the name we check
		// and the name the transport and the certificate see could differ.
		var again string
		again, err = hostProfile.ToASCII(name)
		if err == nil && again != strings.ToLower(name) {
			err = policyReason("ASCII form " + strconv.Quote(name) + " is not stable")
		}
	}
	if err != nil {
		return "", policyReason("host " + strconv.Quote(h) + " is not a valid domain name: " + err.Error())
	}
	name = strings.ToLower(name)
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			return "", policyReason("host " + strconv.Quote(h) + " has a character outside letters, digits, '-', '_' and '.'")
		}
	}
	if numericLastLabel(name) {
		// "127.1", "0x7f.1" or "2130706433" are read as IPv4 by some resolvers and URL parsers
		// but not by others; refuse the ambiguity instead of guessing which one applies.
		return "", policyReason("host " + strconv.Quote(h) + " looks numeric but is not a dotted-quad IPv4 address")
	}
	return name, nil
}

func numericLastLabel(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	if strings.HasPrefix(last, "0x") {
		return true
	}
	return strings.Trim(last, "0123456789") == ""
}

// resolve looks host up once (an IP literal is not looked up), refuses the whole answer if any
// address in it is not global, prefers IPv4, and pins the choice.
func (g *Guard) resolve(ctx context.Context, host string, port uint16) (netip.AddrPort, error) {
	addrs, err := g.lookup(ctx, host)
	if err == nil && !g.selfAddr(host, port) {
		err = g.allowed(host, addrs)
	}
	key := pinKey(host, port)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		// A refused answer also withdraws an earlier approval, so a host that turned private
		// since the last Check cannot still be dialled through the old pin.
		delete(g.pins, key)
		return netip.AddrPort{}, err
	}
	ap := netip.AddrPortFrom(preferIPv4(addrs), port)
	g.pins[key] = ap
	return ap, nil
}

// allowed refuses the whole answer if any address in it is not global.
func (g *Guard) allowed(host string, addrs []netip.Addr) error {
	if g.cfg.AllowPrivate {
		return nil
	}
	for _, a := range addrs {
		if why := NonGlobal(a); why != "" {
			return &BlockedError{Host: host, Addr: a, Reason: why}
		}
	}
	return nil
}

func (g *Guard) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	addrs, err := g.cfg.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, &ResolveError{Host: host, Err: err}
	}
	if len(addrs) == 0 {
		return nil, &ResolveError{Host: host}
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap()
	}
	return addrs, nil
}

// preferIPv4 picks the first IPv4 answer, else the first: many crawler hosts have no IPv6
// route, and that failure would read as the server's rather than ours. HISTOR does the same.
func preferIPv4(addrs []netip.Addr) netip.Addr {
	for _, a := range addrs {
		if a.Is4() {
			return a
		}
	}
	return addrs[0]
}

// urlHost writes host (and the port as the URL gave it) back into URL form.
func urlHost(host, port string) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == "" {
		return host
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}

// isSelf reports whether u names the SetSelf address exactly: its IP
// literal and port, never a host name (a name could resolve anywhere).
func (g *Guard) isSelf(u *url.URL) bool {
	port, err := effectivePort(u.Port(), strings.ToLower(u.Scheme))
	return err == nil && g.selfAddr(u.Hostname(), port)
}

func (g *Guard) selfAddr(host string, port uint16) bool {
	self := g.selfAP()
	a, err := netip.ParseAddr(host)
	return err == nil && self.IsValid() && a.Unmap() == self.Addr().Unmap() && port == self.Port()
}
