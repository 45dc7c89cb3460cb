package httpx

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientAddr(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:f::/48")}
	cases := []struct {
		peer string
		xff  []string
		want string
	}{
		{"192.0.2.1:1", nil, "192.0.2.1"},
		{"192.0.2.1:1", []string{"198.51.100.1"}, "192.0.2.1"}, // untrusted peer: header ignored
		{"10.0.0.1:1", nil, "10.0.0.1"},                        // a proxy that forwards nothing
		{"10.0.0.1:1", []string{"198.51.100.1"}, "198.51.100.1"},
		{"10.0.0.1:1", []string{"1.1.1.1, 198.51.100.1, 10.2.2.2"}, "198.51.100.1"},  // rightmost untrusted
		{"10.0.0.1:1", []string{"1.1.1.1", "198.51.100.1,10.2.2.2"}, "198.51.100.1"}, // several headers in order
		{"10.0.0.1:1", []string{"10.3.3.3, 10.2.2.2"}, "10.3.3.3"},                   // all trusted: the leftmost
		{"10.0.0.1:1", []string{"1.1.1.1, garbage, 10.2.2.2"}, "10.2.2.2"},           // unparseable ends the walk
		{"10.0.0.1:1", []string{"198.51.100.1:8443"}, "198.51.100.1"},
		{"10.0.0.1:1", []string{"[2001:db8::7]:443"}, "2001:db8::7"},
		{"[::ffff:10.0.0.1]:1", []string{"::ffff:198.51.100.1"}, "198.51.100.1"}, // mapped forms unmapped
		{"[2001:db8:f::1]:1", []string{" 2001:db8::9 "}, "2001:db8::9"},
		{"10.0.0.1:1", []string{""}, "10.0.0.1"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", "/", nil)
		r.RemoteAddr = c.peer
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		got, ok := ClientAddr(r, trusted)
		if !ok || got != netip.MustParseAddr(c.want) {
			t.Errorf("peer %s, X-Forwarded-For %q: %v %v, want %s", c.peer, c.xff, got, ok, c.want)
		}
	}
	r := httptest.NewRequest("POST", "/", nil)
	r.RemoteAddr = "pipe"
	if _, ok := ClientAddr(r, trusted); ok {
		t.Error("an unparseable peer was given an address")
	}
}

func TestKeyOf(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1":            "192.0.2.1/32",
		"::ffff:192.0.2.1":     "192.0.2.1/32",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"fe80::1%eth0":         "fe80::/64",
	} {
		if got := KeyOf(netip.MustParseAddr(in)); got.String() != want {
			t.Errorf("KeyOf(%s) = %s, want %s", in, got, want)
		}
	}
}
