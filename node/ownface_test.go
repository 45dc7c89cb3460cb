package node_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/registry/registrytest"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/node"
)

// TestNodeObservesOwnFace: with ObserveOwnFace, a crawl observes the node's
// own /mcp like any server, and the tool-set digest in its log is the one an
// MCP Go SDK client computes from tools/list. (The registry fixture is plain
// http, so this node allows private targets; crawl/guard's TestSelf shows
// the guard lets exactly the own address through without that.)
func TestNodeObservesOwnFace(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and crawls it over loopback")
	}
	reg := registrytest.Server(t, nil)
	o := startObserverWith(t, node.Config{ObserveOwnFace: true,
		Crawl: crawl.Config{Registry: reg.URL, AllowPrivateTargets: true}})
	ctx := context.Background()
	o.crawl()

	// What an SDK client reads from the face.
	cl := mcp.NewClient(&mcp.Implementation{Name: "ownface-test", Version: "1"}, nil)
	sess, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: o.base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	list, err := sess.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(list.Tools)
	tools, err := canon.ParseDeferringNumbers(raw, canon.Limits{MaxDepth: 64, MaxBytes: len(raw) + 1})
	if err != nil {
		t.Fatal(err)
	}
	set, err := mtl.CanonicalToolSet(tools.([]any))
	if err != nil {
		t.Fatal(err)
	}
	want := mtl.SRI(set)

	id := mtl.ServerID("histor.self/histor.local/log", o.base+"/mcp")
	var page struct {
		Descriptor struct {
			Server  struct{ Registry string }
			ToolSet struct{ DigestSRI string }
		}
		Labels []struct{ Method string }
	}
	o.getJSON("/api/v1/servers/"+id, &page)
	if page.Descriptor.ToolSet.DigestSRI != want || len(page.Labels) < 3 || page.Descriptor.Server.Registry != registry.CuratedRegistry {
		t.Fatalf("the log holds %+v for the own face, the SDK client reads %s", page, want)
	}
}
