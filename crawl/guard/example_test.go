package guard_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/histor-observer/histor/crawl/guard"
)

// mapResolver answers from a fixed table, as a test or a demo would.
type mapResolver map[string][]netip.Addr

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func ExampleGuard_Check() {
	g, err := guard.New(guard.Config{
		UserAgent: guard.UserAgent("1.0.0", "https://observer.example"),
		Resolver: mapResolver{
			"mcp.example.com":      {netip.MustParseAddr("93.184.216.34")},
			"internal.example.com": {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.7")},
		},
	})
	if err != nil {
		panic(err)
	}
	for _, u := range []string{
		"https://mcp.example.com/mcp",
		"https://internal.example.com/mcp",
		"http://mcp.example.com/mcp",
		"https://{tenant}.example.com/mcp",
	} {
		target, err := g.Check(context.Background(), u)
		if err != nil {
			status, _ := guard.Status(err)
			fmt.Println(status)
			continue
		}
		fmt.Println("ok", target.Host, target.Addr) // then g.Client().Get(target.URL.String())
	}
	// Output:
	// ok mcp.example.com 93.184.216.34:443
	// blocked-address
	// blocked-address
	// templated-url
}
