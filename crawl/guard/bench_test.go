package guard

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

// The two benchmarks below share a handler and a loopback server; the difference between
// them is what the guard costs per request on a kept-alive connection (policy check, pin
// lookup, header clone and User-Agent) beyond a bare http.Transport.

func benchServer(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`)
	}))
	b.Cleanup(srv.Close)
	return srv
}

func benchRoundTrips(b *testing.B, c *http.Client, url string) {
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func BenchmarkBareRoundTrip(b *testing.B) {
	srv := benchServer(b)
	tr := &http.Transport{DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	benchRoundTrips(b, &http.Client{Transport: tr}, srv.URL+"/mcp")
}

func BenchmarkGuardedRoundTrip(b *testing.B) {
	srv := benchServer(b)
	g := newGuard(b, Config{AllowPrivate: true, Resolver: &fakeResolver{table: map[string][]string{}}})
	target, err := g.Check(context.Background(), srv.URL+"/mcp")
	if err != nil {
		b.Fatal(err)
	}
	benchRoundTrips(b, g.Client(), target.URL.String())
}

// staticResolver answers every name with the same addresses, without bookkeeping, so the
// benchmark measures the guard rather than the fake.
type staticResolver []netip.Addr

func (r staticResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return append([]netip.Addr(nil), r...), nil
}

// BenchmarkCheck is the cost of one Check of a name (policy, IDNA, one fake lookup, pin).
func BenchmarkCheck(b *testing.B) {
	g := newGuard(b, Config{Resolver: staticResolver{netip.MustParseAddr("93.184.216.34")}})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Check(context.Background(), "https://bücher.example/mcp"); err != nil {
			b.Fatal(err)
		}
	}
}
