package guard

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestNonGlobal(t *testing.T) {
	tests := []struct {
		addr   string
		global bool
		reason string // substring of the reason when not global
	}{
		// IPv4, each range at and just past its edges.
		{"0.0.0.0", false, "this-network"},
		{"0.255.255.255", false, "this-network"},
		{"1.0.0.0", true, ""},
		{"8.8.8.8", true, ""},
		{"9.255.255.255", true, ""},
		{"10.0.0.0", false, "private"},
		{"10.255.255.255", false, "private"},
		{"11.0.0.0", true, ""},
		{"100.63.255.255", true, ""},
		{"100.64.0.0", false, "CGNAT"},
		{"100.127.255.255", false, "CGNAT"},
		{"100.128.0.0", true, ""},
		{"126.255.255.255", true, ""},
		{"127.0.0.1", false, "loopback"},
		{"127.255.255.255", false, "loopback"},
		{"128.0.0.0", true, ""},
		{"169.253.255.255", true, ""},
		{"169.254.169.254", false, "link-local"},
		{"169.255.0.0", true, ""},
		{"172.15.255.255", true, ""},
		{"172.16.0.0", false, "private"},
		{"172.31.255.255", false, "private"},
		{"172.32.0.0", true, ""},
		{"192.0.0.8", false, "IETF"},
		{"192.0.2.1", false, "documentation"},
		{"192.0.3.0", true, ""},
		{"192.88.99.1", false, "6to4 relay"},
		{"192.167.255.255", true, ""},
		{"192.168.0.0", false, "private"},
		{"192.168.255.255", false, "private"},
		{"192.169.0.0", true, ""},
		{"198.17.255.255", true, ""},
		{"198.18.0.0", false, "benchmarking"},
		{"198.19.255.255", false, "benchmarking"},
		{"198.20.0.0", true, ""},
		{"198.51.100.7", false, "documentation"},
		{"203.0.113.9", false, "documentation"},
		{"223.255.255.255", true, ""},
		{"224.0.0.1", false, "multicast"},
		{"239.255.255.255", false, "multicast"},
		{"240.0.0.1", false, "reserved"},
		{"255.255.255.254", false, "reserved"},
		{"255.255.255.255", false, "broadcast"},
		// IPv6.
		{"::", false, "outside 2000::/3"},
		{"::1", false, "outside 2000::/3"},
		{"::7f00:1", false, "outside 2000::/3"}, // IPv4-compatible 127.0.0.1
		{"::ffff:127.0.0.1", false, "loopback"},
		{"::ffff:10.1.2.3", false, "private"},
		{"::ffff:169.254.169.254", false, "link-local"},
		{"::ffff:8.8.8.8", true, ""},
		{"64:ff9b::8.8.8.8", true, ""},
		{"64:ff9b::10.0.0.1", false, "NAT64 of 10.0.0.1: private"},
		{"64:ff9b::a9fe:a9fe", false, "NAT64 of 169.254.169.254"},
		{"64:ff9b:1::1", false, "outside 2000::/3"}, // local-use NAT64 prefix
		{"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false, "outside 2000::/3"},
		{"2000::", true, ""},
		{"2001::1", false, "Teredo"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false, "Teredo"},
		{"2001:1ff:ffff::", false, "IETF"},
		{"2001:200::1", true, ""},
		{"2001:db8::1", false, "documentation"},
		{"2001:4860:4860::8888", true, ""},
		{"2002:7f00:1::1", false, "6to4"},
		{"2002:808:808::1", false, "6to4"},
		{"2606:4700:4700::1111", true, ""},
		{"3ffe:ffff::", true, ""},
		{"3fff::1", false, "documentation"},
		{"4000::", false, "outside 2000::/3"},
		{"5f00::1", false, "outside 2000::/3"},
		{"fc00::1", false, "outside 2000::/3"},
		{"fd12:3456::1", false, "outside 2000::/3"},
		{"fe80::1", false, "outside 2000::/3"},
		{"fe80::1%eth0", false, "outside 2000::/3"},
		{"fec0::1", false, "outside 2000::/3"},
		{"ff02::1", false, "outside 2000::/3"},
	}
	for _, tt := range tests {
		why := NonGlobal(netip.MustParseAddr(tt.addr))
		if (why == "") != tt.global {
			t.Errorf("NonGlobal(%s) = %q, want global=%v", tt.addr, why, tt.global)
			continue
		}
		if !strings.Contains(why, tt.reason) {
			t.Errorf("NonGlobal(%s) = %q, want it to mention %q", tt.addr, why, tt.reason)
		}
	}
	if NonGlobal(netip.Addr{}) == "" {
		t.Error("the zero Addr passed as global")
	}
}

func testResolver() *fakeResolver {
	return &fakeResolver{table: map[string][]string{
		"public.test":           {"93.184.216.34"},
		"under_score.example":   {"93.184.216.34"},
		"xn--bcher-kva.example": {"93.184.216.34"},
		"private.test":          {"10.0.0.5"},
		"loopback.test":         {"127.0.0.1"},
		"mixed.test":            {"93.184.216.34", "2606:4700::1", "10.0.0.5"},
		"mixed6.test":           {"93.184.216.34", "fd00::1"},
		"mapped.test":           {"::ffff:192.168.1.1"},
		"nat64.test":            {"64:ff9b::c0a8:101"},
		"dual.test":             {"2606:4700::1", "93.184.216.34"},
		"v6only.test":           {"2606:4700::1", "2606:4700::2"},
		"empty.test":            {},
	}}
}

func TestCheckPolicy(t *testing.T) {
	type want int
	const (
		ok want = iota
		policy
		blocked
		templated
		unresolved
	)
	tests := []struct {
		url      string
		private  bool
		want     want
		addr     string // expected Target.Addr when ok
		blockedA string // expected BlockedError.Addr
	}{
		{url: "https://public.test/mcp", want: ok, addr: "93.184.216.34:443"},
		{url: "https://PUBLIC.test:8443/mcp", want: ok, addr: "93.184.216.34:8443"},
		{url: "https://public.test./mcp", want: ok, addr: "93.184.216.34:443"},
		{url: "HTTPS://public.test/", want: ok, addr: "93.184.216.34:443"},
		{url: "https://under_score.example/", want: ok, addr: "93.184.216.34:443"},
		{url: "https://8.8.8.8/mcp", want: ok, addr: "8.8.8.8:443"},
		{url: "https://[2606:4700:4700::1111]:8443/", want: ok, addr: "[2606:4700:4700::1111]:8443"},
		{url: "https://dual.test/", want: ok, addr: "93.184.216.34:443"},
		{url: "https://v6only.test/", want: ok, addr: "[2606:4700::1]:443"},

		{url: "http://public.test/mcp", want: policy},
		{url: "ftp://public.test/", want: policy},
		{url: "wss://public.test/", want: policy},
		{url: "https://user:pw@public.test/", want: policy},
		{url: "https://user@public.test/", want: policy},
		{url: "https://:pw@public.test/", want: policy},
		{url: "https:///mcp", want: policy},
		{url: "https:public.test", want: policy},
		{url: "https://public.test:0/", want: policy},
		{url: "https://public.test:65536/", want: policy},
		{url: "https://public.test:99999999999/", want: policy},
		{url: "https://public.test:abc/", want: policy},
		{url: "https://[::1/", want: policy},
		{url: "https://[fe80::1%25eth0]/", want: policy},
		{url: "https://127.1/", want: policy},
		{url: "https://2130706433/", want: policy},
		{url: "https://0x7f.1/", want: policy},
		{url: "https://ab--cd.example/", want: policy},
		{url: "https://xn--a.example/", want: policy},
		{url: "https://-lead.example/", want: policy},
		{url: "https://a\u200db.example/", want: policy},
		{url: "https://exa%20mple.com/", want: policy},
		{url: "https://a..b/", want: policy},
		{url: "https://0\xc300/", want: policy}, // invalid UTF-8 that IDNA alone would encode
		{url: "https://" + strings.Repeat("a", 64) + ".example/", want: policy},

		{url: "https://{tenant}.example/mcp", want: templated},
		{url: "https://public.test/{id}/mcp", want: templated},
		{url: "https://public.test/mcp?key={key}", want: templated},
		{url: "https://public.test/mcp}", want: templated},

		{url: "https://127.0.0.1/", want: blocked, blockedA: "127.0.0.1"},
		{url: "https://10.0.0.1:8443/", want: blocked, blockedA: "10.0.0.1"},
		{url: "https://[::1]/", want: blocked, blockedA: "::1"},
		{url: "https://[::ffff:127.0.0.1]/", want: blocked, blockedA: "127.0.0.1"},
		{url: "https://[64:ff9b::a9fe:a9fe]/", want: blocked, blockedA: "64:ff9b::a9fe:a9fe"},
		{url: "https://private.test/", want: blocked, blockedA: "10.0.0.5"},
		{url: "https://loopback.test/", want: blocked, blockedA: "127.0.0.1"},
		{url: "https://mixed.test/", want: blocked, blockedA: "10.0.0.5"},
		{url: "https://mixed6.test/", want: blocked, blockedA: "fd00::1"},
		{url: "https://mapped.test/", want: blocked, blockedA: "192.168.1.1"},
		{url: "https://nat64.test/", want: blocked, blockedA: "64:ff9b::c0a8:101"},

		{url: "https://nx.test/", want: unresolved},
		{url: "https://empty.test/", want: unresolved},

		{url: "http://127.0.0.1:8080/mcp", private: true, want: ok, addr: "127.0.0.1:8080"},
		{url: "http://loopback.test/", private: true, want: ok, addr: "127.0.0.1:80"},
		{url: "https://mixed.test/", private: true, want: ok, addr: "93.184.216.34:443"},
		{url: "ftp://loopback.test/", private: true, want: policy},
		{url: "http://u@loopback.test/", private: true, want: policy},
		{url: "http://{x}.test/", private: true, want: templated},
	}
	guards := map[bool]*Guard{
		false: newGuard(t, Config{Resolver: testResolver()}),
		true:  newGuard(t, Config{Resolver: testResolver(), AllowPrivate: true}),
	}
	wantStatus := map[want]string{policy: "blocked-address", blocked: "blocked-address", templated: "templated-url", unresolved: "connect"}
	for _, tt := range tests {
		target, err := guards[tt.private].Check(context.Background(), tt.url)
		var (
			pe *PolicyError
			be *BlockedError
			re *ResolveError
		)
		switch tt.want {
		case ok:
			if err != nil {
				t.Errorf("Check(%q): %v", tt.url, err)
			} else if target.Addr.String() != tt.addr {
				t.Errorf("Check(%q).Addr = %s, want %s", tt.url, target.Addr, tt.addr)
			}
			continue
		case policy:
			if !errors.As(err, &pe) {
				t.Errorf("Check(%q) = %v, want *PolicyError", tt.url, err)
			}
		case templated:
			if !errors.Is(err, ErrTemplatedURL) {
				t.Errorf("Check(%q) = %v, want ErrTemplatedURL", tt.url, err)
			}
		case blocked:
			if !errors.As(err, &be) {
				t.Errorf("Check(%q) = %v, want *BlockedError", tt.url, err)
			} else if be.Addr.String() != tt.blockedA || be.Reason == "" {
				t.Errorf("Check(%q) blocked %s (%q), want %s", tt.url, be.Addr, be.Reason, tt.blockedA)
			}
		case unresolved:
			if !errors.As(err, &re) {
				t.Errorf("Check(%q) = %v, want *ResolveError", tt.url, err)
			}
		}
		if st, _ := Status(err); st != wantStatus[tt.want] {
			t.Errorf("Status(Check(%q)) = %q, want %q", tt.url, st, wantStatus[tt.want])
		}
	}
}

func TestCheckIDNA(t *testing.T) {
	r := testResolver()
	g := newGuard(t, Config{Resolver: r})
	for _, raw := range []string{"https://bücher.example/mcp", "https://BÜCHER.Example:8443/mcp?q=1", "https://xn--bcher-kva.example/mcp"} {
		target, err := g.Check(context.Background(), raw)
		if err != nil {
			t.Fatalf("Check(%q): %v", raw, err)
		}
		if target.Host != "xn--bcher-kva.example" {
			t.Errorf("Check(%q).Host = %q", raw, target.Host)
		}
		if h := target.URL.Hostname(); h != "xn--bcher-kva.example" {
			t.Errorf("Check(%q).URL host = %q", raw, h)
		}
	}
	if got := r.lookups; len(got) != 3 || got[0] != "xn--bcher-kva.example" || got[1] != got[0] {
		t.Errorf("lookups = %q, want the ASCII name three times", got)
	}
	target, _ := g.Check(context.Background(), "https://BÜCHER.Example:8443/mcp?q=1")
	if s := target.URL.String(); s != "https://xn--bcher-kva.example:8443/mcp?q=1" {
		t.Errorf("URL = %q", s)
	}
}

func TestCheckResolvesOncePerCall(t *testing.T) {
	r := testResolver()
	g := newGuard(t, Config{Resolver: r})
	for i := 1; i <= 3; i++ {
		if _, err := g.Check(context.Background(), "https://public.test/"); err != nil {
			t.Fatal(err)
		}
		if n := r.count("public.test"); n != i {
			t.Fatalf("after %d checks, %d lookups", i, n)
		}
	}
	if _, err := g.Check(context.Background(), "https://8.8.8.8/"); err != nil {
		t.Fatal(err)
	}
	if n := len(r.lookups); n != 3 {
		t.Errorf("an IP literal was looked up: %d lookups", n)
	}
}

func TestUserAgent(t *testing.T) {
	got := UserAgent("1.2.3", "https://histor.example")
	if got != "histor/1.2.3 (+https://histor.example; read-only: initialize + tools/list)" {
		t.Errorf("UserAgent = %q", got)
	}
}

func TestNewRefusesNegativeBound(t *testing.T) {
	if _, err := New(Config{MaxConnsPerHost: -1, Logger: quietLogger()}); err == nil {
		t.Error("New accepted MaxConnsPerHost -1")
	}
}
