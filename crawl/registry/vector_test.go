package registry_test

import (
	"context"
	"testing"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/registry/registrytest"
)

// Target ids are HISTOR's server ids; the expected values were computed
// apart from this code base, as the first 16 hex digits of
// sha256sum over "name\nendpoint".
func TestTargetIDVector(t *testing.T) {
	r := registrytest.Server(t, []registrytest.Entry{
		{Name: "io.example/weather", Version: "1.2.0", IsLatest: true,
			Remotes: []registrytest.Remote{{Type: "streamable-http", URL: "https://weather.example/mcp"}}},
		{Name: "io.example/tenant", Version: "0.1.0", IsLatest: true,
			Remotes: []registrytest.Remote{{Type: "sse", URL: "https://{tenant}.example/sse"}}},
	})
	h, err := registry.Harvest(context.Background(), r.Client(), r.URL, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ id, name, skip string }{
		{"03b153ab83b2374a", "io.example/tenant", "templated-url"},
		{"fad9117a1d7229a6", "io.example/weather", ""},
	}
	if len(h.Targets) != len(want) {
		t.Fatalf("%d targets, want %d", len(h.Targets), len(want))
	}
	for i, w := range want {
		if g := h.Targets[i]; g.ID != w.id || g.Name != w.name || g.Skip != w.skip {
			t.Errorf("target %d = %s %s %q, want %+v", i, g.ID, g.Name, g.Skip, w)
		}
	}
}
