package command

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/registry/registrytest"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/node"
)

// TestCrawlCommand runs "histor crawl" in process against a local registry
// fixture listing one MCP Go SDK server and one templated URL.
func TestCrawlCommand(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes text."},
		func(context.Context, *mcp.CallToolRequest, struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			panic("a tool was called")
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer srv.Close()
	reg := registrytest.Server(t, []registrytest.Entry{
		{Name: "io.example/echo", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: srv.URL + "/mcp"}}},
		{Name: "io.example/tenant", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: "https://{tenant}.example.com/mcp"}}},
	})
	data := t.TempDir()
	var out, errb bytes.Buffer
	d := deps{stdio: Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}, crawlOnce: crawlOnce}
	code := run(context.Background(), []string{"histor", "--log-level", "warn", "crawl", "--data", data,
		"--registry", reg.URL, "--allow-private-targets", "--workers", "2"}, d)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"2 targets, 3 labels, 0 changes", "labels: name-threat-match 1 tool-def-pattern-scan 1 tool-set-observation 1", "ok ", "templated-url "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errb.String(), "crawl: 2/2 targets") {
		t.Errorf("no plain progress line on a non-terminal stderr: %q", errb.String())
	}
	st, err := state.Open(filepath.Join(data, "state"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if runs, err := st.Runs(0); err != nil || len(runs) != 1 || runs[0].Labels != 3 {
		t.Errorf("recorded runs %+v, %v", runs, err)
	}
}

func TestCrawlCommandRefusesCleartextWithoutAllowPrivate(t *testing.T) {
	var out, errb bytes.Buffer
	d := deps{stdio: Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}, crawlOnce: crawlOnce}
	code := run(context.Background(), []string{"histor", "crawl", "--data", t.TempDir(), "--registry", "http://127.0.0.1:1"}, d)
	if code != 2 || !strings.Contains(errb.String(), "AllowPrivateTargets") {
		t.Errorf("exit %d, stderr %q; want 2 (a usage error, found before anything opens) and the reason", code, errb.String())
	}
}

// TestCrawlBoundFlags: every client and registry bound is an operator flag,
// refused when it cannot work, before anything is opened.
func TestCrawlBoundFlags(t *testing.T) {
	for name, args := range map[string][]string{
		"per-host 1":             {"--per-host", "1"},
		"zero deadline":          {"--observation-deadline", "0s"},
		"zero response bytes":    {"--max-response-bytes", "0"},
		"tool set over MTL/1's":  {"--max-toolset-bytes", "5000000"},
		"depth over MTL/1's":     {"--max-json-depth", "65"},
		"negative tools":         {"--max-tools", "-1"},
		"zero registry servers":  {"--registry-max-servers", "0"},
		"zero registry pages":    {"--registry-max-pages", "0"},
		"zero SSE event bytes":   {"--max-sse-event-bytes", "0"},
		"zero registry page len": {"--registry-max-page-bytes", "0"},
		"zero header bytes":      {"--max-response-header-bytes", "0"},
	} {
		var out, errb bytes.Buffer
		d := deps{stdio: Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}, crawlOnce: crawlOnce}
		data := t.TempDir()
		argv := append([]string{"histor", "crawl", "--data", data}, args...)
		if code := run(context.Background(), argv, d); code != 2 {
			t.Errorf("%s: exit %d, stderr %q; want 2", name, code, errb.String())
		}
		if entries, _ := os.ReadDir(data); len(entries) != 0 {
			t.Errorf("%s: refused only after opening the data directory", name)
		}
	}
}

// TestServeCrawlFlags maps serve's crawl flags from flags, environment and file.
func TestServeCrawlFlags(t *testing.T) {
	file := writeConfig(t, "data = \"/d\"\nworkers = 7\nregistry = \"https://registry.example\"\nmax-tools = 900\nregistry-max-page-bytes = 65536\n")
	t.Setenv("HISTOR_CRAWL_INTERVAL", "6h")
	t.Setenv("HISTOR_OBSERVATION_DEADLINE", "15s")
	t.Setenv("HISTOR_MAX_RESPONSE_HEADER_BYTES", "8192")
	var got node.Config
	d := deps{
		stdio: Stdio{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}},
		runNode: func(_ context.Context, cfg node.Config) error {
			got = cfg
			return nil
		},
	}
	code := run(context.Background(), []string{"histor", "--config", file, "serve", "--continuity-gap", "30h", "--opt-out", "/etc/o.txt",
		"--per-host", "3", "--max-json-depth", "32", "--max-pages", "9"}, d)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	c := got.Crawl
	if got.CrawlInterval != 6*time.Hour || c.Workers != 7 || c.Registry != "https://registry.example" ||
		c.ContinuityGap != 30*time.Hour || c.OptOutFile != "/etc/o.txt" || c.AllowPrivateTargets {
		t.Errorf("serve crawl settings %+v (interval %s)", c, got.CrawlInterval)
	}
	if c.MaxTools != 900 || c.RegistryOptions.MaxPageBytes != 65536 || c.Deadline != 15*time.Second ||
		c.PerHost != 3 || c.MaxJSONDepth != 32 || c.MaxPages != 9 || c.MaxResponseHeaderBytes != 8192 ||
		c.MaxResponseBytes != mcpclient.DefaultMaxResponseBytes || c.RegistryOptions.MaxServers != registry.DefaultMaxServers {
		t.Errorf("serve crawl bounds %+v", c)
	}
	for _, bad := range [][]string{{"--crawl-interval", "-1h"}, {"--workers", "0"}} {
		code := run(context.Background(), append([]string{"histor", "serve", "--data", "/d"}, bad...), d)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}
