package command

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/histor-observer/histor/node"
)

// runServe runs "histor <args>" with a runNode that records the config instead of starting.
func runServe(t *testing.T, args ...string) (node.Config, bool, int, string) {
	t.Helper()
	var got node.Config
	called := false
	var stderr bytes.Buffer
	d := deps{
		stdio: Stdio{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &stderr},
		runNode: func(_ context.Context, cfg node.Config) error {
			got, called = cfg, true
			return nil
		},
	}
	code := run(context.Background(), append([]string{"histor"}, args...), d)
	return got, called, code, stderr.String()
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "histor.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPrecedenceFlagEnvFileDefault(t *testing.T) {
	file := writeConfig(t, `
data = "/from/file"
http = "127.0.0.1:1111"
origin = "file.example/log"
max-entries = 7
read-timeout = "3s"
`)
	cases := []struct {
		name     string
		env      map[string]string
		args     []string
		wantHTTP string
		wantOrig string
	}{
		{"default", nil, []string{"serve", "--data", "/d"}, node.DefaultHTTPAddr, node.DefaultLogOrigin},
		{"file over default", nil, []string{"--config", file, "serve"}, "127.0.0.1:1111", "file.example/log"},
		{"env over file", map[string]string{"HISTOR_HTTP": "127.0.0.1:2222"}, []string{"--config", file, "serve"}, "127.0.0.1:2222", "file.example/log"},
		{"flag over env", map[string]string{"HISTOR_HTTP": "127.0.0.1:2222", "HISTOR_ORIGIN": "env.example/log"},
			[]string{"--config", file, "serve", "--http", "127.0.0.1:3333"}, "127.0.0.1:3333", "env.example/log"},
		{"config named by env", map[string]string{"HISTOR_CONFIG": file}, []string{"serve"}, "127.0.0.1:1111", "file.example/log"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			cfg, called, code, stderr := runServe(t, tc.args...)
			if code != 0 || !called {
				t.Fatalf("exit %d, node started %v: %s", code, called, stderr)
			}
			if cfg.HTTPAddr != tc.wantHTTP || cfg.LogOrigin != tc.wantOrig {
				t.Errorf("http %q origin %q, want %q %q", cfg.HTTPAddr, cfg.LogOrigin, tc.wantHTTP, tc.wantOrig)
			}
		})
	}
}

func TestConfigFileTypes(t *testing.T) {
	file := writeConfig(t, "data = \"/x\"\nmax-entries = 7\nread-timeout = \"3s\"\ncache-bytes = 1048576\nwitness-name = \"w.example/witness\"\n")
	cfg, _, code, stderr := runServe(t, "--config", file, "serve")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if cfg.DataDir != "/x" || cfg.MaxEntries != 7 || cfg.ReadTimeout != 3*time.Second || cfg.CacheBytes != 1<<20 ||
		cfg.WitnessName != "w.example/witness" || cfg.SeedFile != "/x/seed" {
		t.Errorf("config %+v does not hold the file's values", cfg)
	}
}

func TestInvalidConfigIsRefusedBeforeStarting(t *testing.T) {
	cases := map[string][]string{
		"no data dir":       {"serve"},
		"origin with space": {"serve", "--data", "/d", "--origin", "a b"},
		"bad public url":    {"serve", "--data", "/d", "--public-url", "ftp://x"},
		"too many entries":  {"serve", "--data", "/d", "--max-entries", "5000"},
		"unknown flag":      {"serve", "--data", "/d", "--nope"},
		"bad log level":     {"--log-level", "loud", "serve", "--data", "/d"},
		"missing config":    {"--config", "/nonexistent/histor.toml", "serve", "--data", "/d"},
		"misspelt key":      {"--config", writeConfig(t, "dta = \"/d\"\n"), "serve", "--data", "/d"},
		"wrong type":        {"--config", writeConfig(t, "max-entries = \"many\"\n"), "serve", "--data", "/d"},
		"unknown command":   {"serv"},
		"flag as data dir":  {"serve", "--data", "--profile", "prod"},
		"flag as rootfs":    {"sandbox", "npm:x@1.0.0", "--rootfs", "--skip-root-check"},
		"flag as members":   {"serve", "--data", "/d", "--members", "-x"},
		"flag as a peer":    {"serve", "--data", "/d", "--peer", "./a.json", "--peer", "-x"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			_, called, code, stderr := runServe(t, args...)
			if called {
				t.Fatal("the node was started with an invalid configuration")
			}
			if code != 2 {
				t.Errorf("exit %d, want 2 (usage); stderr: %s", code, stderr)
			}
			if stderr == "" {
				t.Error("nothing on stderr says what is wrong")
			}
			if strings.HasPrefix(name, "flag as") && !strings.Contains(stderr, "looks like a flag given no value") {
				t.Errorf("refused for another reason: %s", stderr)
			}
		})
	}
	for _, p := range []string{"--profile", "--skip-root-check", "-x"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a flag taken as a path made %q", p)
		}
	}
}

func TestExampleConfigIsValid(t *testing.T) {
	cfg, called, code, stderr := runServe(t, "--config", "../../../../configs/histor.example.toml", "serve")
	if code != 0 || !called {
		t.Fatalf("the documented example config is refused: exit %d: %s", code, stderr)
	}
	if cfg.LogOrigin != "observer.example.org/log" || cfg.PublicURL != "https://observer.example.org" {
		t.Errorf("example config read as %+v", cfg)
	}
}

func TestEveryFlagIsDocumentedInTheExample(t *testing.T) {
	example, err := os.ReadFile("../../../../configs/histor.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	app := newApp(deps{stdio: Stdio{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}})
	for name := range flagNames(app) {
		if name == configFlag || name == "help" || name == "h" {
			continue
		}
		if !bytes.Contains(example, []byte("\n"+name+" =")) && !bytes.Contains(example, []byte("\n# "+name+" =")) {
			t.Errorf("flag --%s has no entry in configs/histor.example.toml", name)
		}
	}
}

// TestSharedFlagsMeanOneThing: a flag name that two commands both read from the config file
// (whose keys are flag names) reads the same environment variables in both, so one file cannot
// hand a command another's setting: the worker's NKey seed was once "seed", which a file shared
// with serve sets to the node's seed. (demo's flags are not read from the file.)
func TestSharedFlagsMeanOneThing(t *testing.T) {
	app := newApp(deps{stdio: Stdio{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}})
	type use struct{ command, env string }
	seen := map[string]use{}
	shared := 0
	var walk func(prefix string, flags []cli.Flag, cmds []*cli.Command)
	walk = func(prefix string, flags []cli.Flag, cmds []*cli.Command) {
		for _, f := range flags {
			e, ok := f.(interface{ GetEnvVars() []string })
			if _, fromFile := f.(altsrc.FlagInputSourceExtension); !ok || !fromFile {
				continue
			}
			env := strings.Join(e.GetEnvVars(), ",")
			for _, name := range f.Names() {
				first, ok := seen[name]
				switch {
				case !ok:
					seen[name] = use{prefix, env}
				case first.env != env:
					t.Errorf("--%s reads %s in %q but %s in %q", name, first.env, first.command, env, prefix)
				default:
					shared++
				}
			}
		}
		for _, c := range cmds {
			walk(strings.TrimSpace(prefix+" "+c.Name), c.Flags, c.Subcommands)
		}
	}
	walk("histor", app.Flags, app.Commands)
	if shared == 0 {
		t.Error("no flag name is shared by two commands: the test checked nothing")
	}
}

func TestEveryCommandAndFlagHasHelp(t *testing.T) {
	app := newApp(deps{stdio: Stdio{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}})
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Usage == "" {
				t.Errorf("command %s%s has no usage text", prefix, c.Name)
			}
			for _, f := range c.Flags {
				if u, ok := f.(interface{ GetUsage() string }); !ok || u.GetUsage() == "" {
					t.Errorf("flag --%s of %s%s has no help", f.Names()[0], prefix, c.Name)
				}
				if e, ok := f.(interface{ GetEnvVars() []string }); !ok || len(e.GetEnvVars()) == 0 ||
					!strings.HasPrefix(e.GetEnvVars()[0], "HISTOR_") {
					t.Errorf("flag --%s of %s%s has no HISTOR_* variable", f.Names()[0], prefix, c.Name)
				}
			}
			walk(prefix+c.Name+" ", c.Subcommands)
		}
	}
	walk("", app.Commands)
}

// TestNodeSettingsMapping: the node-only settings reach node.Config from flags, environment
// and file, and "prod" refuses what HISTOR's prod refuses before anything starts.
func TestNodeSettingsMapping(t *testing.T) {
	file := writeConfig(t, "data = \"/d\"\nprofile = \"prod\"\npublic-url = \"https://observer.example.org\"\n")
	t.Setenv("HISTOR_OPERATOR_TOKEN", "0123456789abcdef01234567")
	cfg, called, code, stderr := runServe(t, "--config", file, "serve", "--crawl-interval", "6h")
	if code != 0 || !called {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if cfg.Profile != node.ProfileProd || cfg.OperatorToken != "0123456789abcdef01234567" || cfg.CrawlInterval != 6*time.Hour {
		t.Errorf("profile %q, token %q, interval %v", cfg.Profile, cfg.OperatorToken, cfg.CrawlInterval)
	}
	if cfg.Crawl.Logger != cfg.Logger || cfg.Crawl.Registerer == nil || cfg.Registry == nil || cfg.Crawl.Version != node.Version {
		t.Error("the crawl's logger, registerer and version are not the node's")
	}
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: "probe", Help: "probe"})
	cfg.Crawl.Registerer.MustRegister(probe)
	if fams, err := cfg.Registry.Gather(); err != nil || len(fams) != 1 || fams[0].GetMetric()[0].GetLabel()[0].GetValue() != cfg.LogOrigin {
		t.Errorf("the crawl's registerer does not reach the node's registry with its origin label: %v %v", fams, err)
	}
	for name, args := range map[string][]string{
		"short token":     {"serve", "--data", "/d", "--profile", "prod", "--public-url", "https://o.example", "--operator-token", "short"},
		"cleartext url":   {"serve", "--data", "/d", "--profile", "prod", "--public-url", "http://o.example", "--operator-token", "0123456789abcdef01234567"},
		"private targets": {"serve", "--data", "/d", "--profile", "prod", "--public-url", "https://o.example", "--operator-token", "0123456789abcdef01234567", "--allow-private-targets"},
		"unknown profile": {"serve", "--data", "/d", "--profile", "staging"},
	} {
		t.Setenv("HISTOR_OPERATOR_TOKEN", "")
		if _, called, code, stderr := runServe(t, args...); called || code != 2 || stderr == "" {
			t.Errorf("%s: started %v, exit %d, stderr %q; want refused with exit 2", name, called, code, stderr)
		}
	}
	cfg, _, code, _ = runServe(t, "serve", "--data", "/d")
	if code != 0 || cfg.Profile != node.ProfileDev || cfg.OperatorToken != "" || cfg.CrawlInterval != 24*time.Hour {
		t.Errorf("defaults: exit %d, profile %q, token %q, interval %v", code, cfg.Profile, cfg.OperatorToken, cfg.CrawlInterval)
	}
}

// TestCheckLimitFlags: the /check limits and trusted proxies reach node.Config from flags,
// environment and file, default to node's defaults, and malformed values are refused before
// anything starts.
func TestCheckLimitFlags(t *testing.T) {
	cfg, called, code, stderr := runServe(t, "serve", "--data", "/d")
	if code != 0 || !called {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if cfg.ChecksPerMinute != node.DefaultChecksPerMinute || cfg.ScansPerHour != node.DefaultScansPerHour ||
		cfg.MaxCheckClients != node.DefaultMaxCheckClients || cfg.TrustedProxies != nil {
		t.Errorf("defaults: %d %d %d %v", cfg.ChecksPerMinute, cfg.ScansPerHour, cfg.MaxCheckClients, cfg.TrustedProxies)
	}

	file := writeConfig(t, "data = \"/d\"\nchecks-per-minute = 5\ntrusted-proxies = \"10.0.0.0/8, fd00::/8\"\n")
	t.Setenv("HISTOR_SCANS_PER_HOUR", "-1")
	cfg, _, code, stderr = runServe(t, "--config", file, "serve", "--max-check-clients", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	if cfg.ChecksPerMinute != 5 || cfg.ScansPerHour != -1 || cfg.MaxCheckClients != 7 || !slices.Equal(cfg.TrustedProxies, want) {
		t.Errorf("from file, env and flag: %d %d %d %v", cfg.ChecksPerMinute, cfg.ScansPerHour, cfg.MaxCheckClients, cfg.TrustedProxies)
	}
	t.Setenv("HISTOR_SCANS_PER_HOUR", "")

	for name, args := range map[string][]string{
		"zero checks":        {"--checks-per-minute", "0"},
		"checks below -1":    {"--checks-per-minute", "-2"},
		"too many checks":    {"--checks-per-minute", "2000000"},
		"zero scans":         {"--scans-per-hour", "0"},
		"zero clients":       {"--max-check-clients", "0"},
		"too many clients":   {"--max-check-clients", "5000000"},
		"bare address":       {"--trusted-proxies", "10.0.0.1"},
		"host bits":          {"--trusted-proxies", "10.0.0.1/8"},
		"mapped IPv4":        {"--trusted-proxies", "::ffff:10.0.0.0/104"},
		"zone":               {"--trusted-proxies", "fe80::%eth0/64"},
		"empty item":         {"--trusted-proxies", "10.0.0.0/8,,fd00::/8"},
		"trailing comma":     {"--trusted-proxies", "10.0.0.0/8,"},
		"twice":              {"--trusted-proxies", "10.0.0.0/8,10.0.0.0/8"},
		"a name, not a CIDR": {"--trusted-proxies", "proxy.internal"},
	} {
		if _, called, code, stderr := runServe(t, append([]string{"serve", "--data", "/d"}, args...)...); called || code != 2 || stderr == "" {
			t.Errorf("%s: started %v, exit %d, stderr %q; want refused with exit 2", name, called, code, stderr)
		}
	}
}

func TestParsePrefixes(t *testing.T) {
	for in, want := range map[string]string{
		"":                            "[]",
		" ":                           "[]",
		"192.168.0.0/16":              "[192.168.0.0/16]",
		"10.0.0.0/8 , 2001:db8::/32 ": "[10.0.0.0/8 2001:db8::/32]",
		"203.0.113.7/32":              "[203.0.113.7/32]",
	} {
		got, err := parsePrefixes(in)
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("parsePrefixes(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
}

// TestSandboxHostFlags: serve's local workers, `histor sandbox` and `histor sandbox worker`
// read the same host settings through one mapping, and serve's reach node.Config.
func TestSandboxHostFlags(t *testing.T) {
	t.Setenv("HISTOR_PYPI_INDEX", "http://127.0.0.1:1/simple/")
	cfg, called, code, stderr := runServe(t, "serve", "--data", "/d", "--sandbox-workers", "1",
		"--sandbox-dir", "/s", "--rootfs", "/r", "--work-bytes", "1048576", "--install-cache-bytes", "2097152",
		"--pypi", "http://127.0.0.1:1/pypi", "--skip-root-check")
	if code != 0 || !called {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	h := cfg.Sandbox.Host
	if h.Dir != "/s" || h.RootfsDir != "/r" || h.WorkBytes != 1<<20 || h.InstallCacheBytes != 2<<20 || !h.SkipRootCheck ||
		h.PyPIIndex != "http://127.0.0.1:1/simple/" || h.PyPI != "http://127.0.0.1:1/pypi" || cfg.Sandbox.PyPI != h.PyPI {
		t.Errorf("serve's sandbox host: %+v (PyPI %q)", h, cfg.Sandbox.PyPI)
	}
	oc, err := h.Config()
	if err != nil {
		t.Fatal(err)
	}
	if oc.WorkDir != "/s/work" || oc.InstallCache != "/s/installs" || oc.RootfsDir != "/r" || oc.PyPIIndex != h.PyPIIndex || oc.WorkBytes != 1<<20 {
		t.Errorf("observer config: %+v", oc)
	}
	// The worker's queue and TLS are its own: serve's HISTOR_NATS_TLS_CERT is not its client
	// certificate, and HISTOR_NATS not its queue.
	for _, f := range sandboxWorkerCommand(deps{}).Flags {
		for _, env := range f.(interface{ GetEnvVars() []string }).GetEnvVars() {
			if strings.HasPrefix(env, "HISTOR_NATS") {
				t.Errorf("worker flag %s reads serve's %s", f.Names()[0], env)
			}
		}
	}
}
