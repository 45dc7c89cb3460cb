package registry_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/log/mtl"
)

// The embedded list must be byte-identical to configs/curated.json, the
// document operators read and edit.
func TestCuratedMatchesConfigs(t *testing.T) {
	want, err := os.ReadFile("../../configs/curated.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("curated.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("crawl/registry/curated.json differs from configs/curated.json; copy configs/curated.json over it")
	}
}

func TestDefaultCurated(t *testing.T) {
	c, err := registry.DefaultCurated()
	if err != nil {
		t.Fatal(err)
	}
	var pkgs, remotes int
	for i, tg := range c.Targets {
		if tg.Registry != registry.CuratedRegistry || tg.ID != mtl.ServerID(tg.Name, tg.Endpoint) || c.Rank[tg.ID] != i {
			t.Fatalf("target %d: %+v", i, tg)
		}
		if tg.Sandboxed() {
			pkgs++
		} else {
			remotes++
		}
	}
	if pkgs < 20 || remotes < 3 {
		t.Fatalf("%d packages and %d remotes", pkgs, remotes)
	}
	// The three packages the sandbox tests run are in it.
	for _, want := range []string{"npm:@modelcontextprotocol/server-everything", "npm:@modelcontextprotocol/server-memory", "npm:@modelcontextprotocol/server-sequential-thinking"} {
		found := false
		for _, tg := range c.Targets {
			found = found || tg.Endpoint == want
		}
		if !found {
			t.Errorf("%s missing", want)
		}
	}
	beyond := c.Beyond([]registry.Target{{Endpoint: "https://mcp.deepwiki.com/mcp"}, {Endpoint: "npm:@playwright/mcp"}})
	if len(beyond) != len(c.Targets)-2 {
		t.Errorf("Beyond kept %d of %d after the registry listed two", len(beyond), len(c.Targets))
	}
}

func TestParseCuratedRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"no urn":       `{"registry":"histor","servers":[]}`,
		"http":         `{"registry":"urn:awr:mtl:1:registry:x","servers":[{"name":"a","endpoint":"http://a.example/mcp"}]}`,
		"bad npm":      `{"registry":"urn:awr:mtl:1:registry:x","servers":[{"name":"a","endpoint":"npm:UPPER"}]}`,
		"unnormalised": `{"registry":"urn:awr:mtl:1:registry:x","servers":[{"name":"a","endpoint":"pypi:Mcp_Server"}]}`,
		"no name":      `{"registry":"urn:awr:mtl:1:registry:x","servers":[{"endpoint":"npm:a"}]}`,
		"twice":        `{"registry":"urn:awr:mtl:1:registry:x","servers":[{"name":"a","endpoint":"npm:a"},{"name":"a","endpoint":"npm:a"}]}`,
		"not json":     `{`,
	} {
		if _, err := registry.ParseCurated([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
