package guard

import (
	"context"
	"net/netip"
	"strings"
	"testing"
)

// FuzzCheck feeds arbitrary URLs to Check with a resolver that answers every name with a
// public address, and holds Check to what callers rely on when it approves one: https only,
// no userinfo, no template braces, a lower-case ASCII host in the URL, a global address, and
// a URL that Check approves again unchanged.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"https://public.test/mcp", "https://bücher.example:8443/a?b=c", "http://x.test/",
		"https://u:p@x.test/", "https://[::ffff:127.0.0.1]/", "https://{t}.x/", "https://127.1/",
		"https://x.test:0/", "https://8.8.8.8/", "https://[2606:4700::1]:1/", "https://a..b/",
	} {
		f.Add(s)
	}
	g := newGuard(f, Config{Resolver: staticResolver{netip.MustParseAddr("93.184.216.34")}})
	f.Fuzz(func(t *testing.T, raw string) {
		target, err := g.Check(context.Background(), raw)
		if err != nil {
			if _, ok := Status(err); !ok {
				t.Fatalf("Check(%q) error %v maps to no status", raw, err)
			}
			return
		}
		u := target.URL
		switch {
		case !strings.EqualFold(u.Scheme, "https"):
			t.Fatalf("Check(%q) approved scheme %q", raw, u.Scheme)
		case u.User != nil:
			t.Fatalf("Check(%q) approved userinfo", raw)
		case strings.ContainsAny(raw, "{}"):
			t.Fatalf("Check(%q) approved a templated URL", raw)
		case NonGlobal(target.Addr.Addr()) != "":
			t.Fatalf("Check(%q) approved address %s", raw, target.Addr)
		}
		for _, r := range target.Host {
			if r > 0x7f || (r >= 'A' && r <= 'Z') {
				t.Fatalf("Check(%q) host %q is not lower-case ASCII", raw, target.Host)
			}
		}
		again, err := g.Check(context.Background(), u.String())
		if err != nil || again.URL.String() != u.String() || again.Addr != target.Addr {
			t.Fatalf("Check(%q) approved %q, which then gives %v, %v", raw, u, again, err)
		}
	})
}
