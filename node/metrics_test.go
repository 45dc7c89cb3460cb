package node

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/registry/registrytest"
	"github.com/histor-observer/histor/node/receipts"
)

// TestMetricsScrape serves a few requests, scrapes /metrics and parses it
// with Prometheus' own text parser: the histor_http_* series are labelled
// by route pattern and code (never by raw path), and the Go runtime and
// process collectors are there.
func TestMetricsScrape(t *testing.T) {
	tn := newTestNode(t, 3)
	for _, p := range []string{"/api/v1/log/sth", "/api/v1/log/sth", "/api/v1/log/sth/3", "/api/v1/log/sth/99", "/no/such/path", "/log/tile/0/000.p/3"} {
		tn.get(t, p)
	}
	resp, body := tn.get(t, "/metrics")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	requests := counts(fams["histor_http_requests_total"])
	for key, want := range map[string]float64{
		"/api/v1/log/sth 200":             2,
		"/api/v1/log/sth/{tree_size} 200": 1,
		"/api/v1/log/sth/{tree_size} 404": 1,
		noRoute + " 404":                  1,
		"/log/tile/{L}/{N...} 200":        1,
	} {
		if requests[key] != want {
			t.Errorf("histor_http_requests_total{%s} = %v, want %v (all: %v)", key, requests[key], want, requests)
		}
	}
	for key := range requests {
		if strings.Contains(key, "/99") || strings.Contains(key, "/no/such") || strings.Contains(key, "000.p") {
			t.Errorf("a raw path became a label: %q", key)
		}
	}
	lat := fams["histor_http_request_duration_seconds"]
	if lat == nil || lat.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("no latency histogram: %v", lat)
	}
	for _, m := range lat.Metric {
		if label(m, "route") == "/api/v1/log/sth" && m.GetHistogram().GetSampleCount() != 2 {
			t.Errorf("latency of /api/v1/log/sth counted %d requests, want 2", m.GetHistogram().GetSampleCount())
		}
	}
	for _, name := range []string{"histor_http_requests_in_flight", "go_goroutines", "process_open_fds"} {
		if fams[name] == nil {
			t.Errorf("no %s series", name)
		}
	}
}

// counts maps "route code" to each series' value.
func counts(f *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	if f == nil {
		return out
	}
	for _, m := range f.Metric {
		out[label(m, "route")+" "+label(m, "code")] = m.GetCounter().GetValue()
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestRegistryPassedIn: nodes of different logs share one registry, each
// series labelled with its node's origin and the Go collector registered
// once; a second open node of the same origin is refused, naming the
// duplicate, and may open once the first has closed.
func TestRegistryPassedIn(t *testing.T) {
	reg := prometheus.NewRegistry()
	open := func(origin string) (*Node, error) {
		t.Helper()
		nd, err := New(Config{DataDir: t.TempDir(), Registry: reg, LogOrigin: origin})
		if err != nil {
			t.Fatal(err)
		}
		return nd, nd.Open(context.Background())
	}
	a, err := open("a.example/log")
	if err != nil {
		t.Fatal(err)
	}
	b, err := open("b.example/log")
	if err != nil {
		t.Fatalf("a second node of another origin on the same registry: %v", err)
	}
	defer b.Close()
	fams := gatheredFamilies(t, reg)
	for _, name := range []string{"histor_log_tree_size", "histor_crawl_changes_total", "histor_http_requests_in_flight"} {
		origins := map[string]bool{}
		for _, m := range fams[name].GetMetric() {
			origins[label(m, "origin")] = true
		}
		if !origins["a.example/log"] || !origins["b.example/log"] {
			t.Errorf("%s has origins %v, want both nodes'", name, origins)
		}
	}
	if f := fams["go_goroutines"]; f == nil || len(f.GetMetric()) != 1 {
		t.Errorf("go_goroutines: %v, want one series for the process", f)
	}

	same, err := open("a.example/log")
	if err == nil || !strings.Contains(err.Error(), "opening metrics") || !strings.Contains(err.Error(), "registering metrics") {
		t.Fatalf("a second open node of origin a: %v, want refused while registering its metrics", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := same.Open(context.Background()); err != nil {
		t.Fatalf("the same origin once the first node closed: %v", err)
	}
	same.Close()
}

// TestReopen: one node opens, closes and opens again, and crawls once and
// then opens, without its metrics colliding with those of its last opening.
func TestReopen(t *testing.T) {
	reg := registrytest.Server(t, nil) // lists nothing: the crawl ends at once
	nd, err := New(Config{DataDir: t.TempDir(), Crawl: crawl.Config{Registry: reg.URL, AllowPrivateTargets: true}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 2 {
		if err := nd.Open(ctx); err != nil {
			t.Fatalf("open %d: %v", i+1, err)
		}
		if err := nd.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := nd.CrawlOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if err := nd.Open(ctx); err != nil {
		t.Fatalf("open after CrawlOnce: %v", err)
	}
	defer nd.Close()
	fams := gatheredFamilies(t, nd.cfg.Registry)
	for _, name := range []string{"histor_log_tree_size", "histor_crawl_changes_total", "histor_http_requests_in_flight"} {
		// The receipts log's histor_log_* series are its own origin's.
		ms := slices.DeleteFunc(fams[name].GetMetric(), func(m *dto.Metric) bool {
			return label(m, "origin") == receipts.Origin(DefaultLogOrigin)
		})
		if len(ms) != 1 || label(ms[0], "origin") != DefaultLogOrigin {
			t.Errorf("%s after CrawlOnce and Open: %v, want one series of origin %s", name, fams[name], DefaultLogOrigin)
		}
	}
}

// gatheredFamilies is what reg holds, by family name.
func gatheredFamilies(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// TestStorePebbleBytes: histor_store_pebble_bytes has a cache and an unflushed series for
// every store of the open node, the log's unflushed bytes hold what it wrote at open, and its
// memtable arenas (histor_store_pebble_memtable_bytes) hold at least those.
func TestStorePebbleBytes(t *testing.T) {
	tn := newTestNode(t, 1)
	kinds := map[string]map[string]float64{}
	for _, m := range gatheredFamilies(t, tn.node.cfg.Registry)["histor_store_pebble_bytes"].GetMetric() {
		store := label(m, "store")
		if kinds[store] == nil {
			kinds[store] = map[string]float64{}
		}
		kinds[store][label(m, "kind")] = m.GetGauge().GetValue()
	}
	for _, store := range []string{"log", "receipts", "crawl_state", "events"} {
		if k := kinds[store]; len(k) != 2 || k["cache"] < 0 || k["unflushed"] < 0 {
			t.Errorf("%s: %v, want a cache and an unflushed series", store, k)
		}
	}
	if kinds["log"]["unflushed"] <= 0 {
		t.Errorf("the log's unflushed bytes: %v after its first head", kinds["log"]["unflushed"])
	}
	memtables := map[string]float64{}
	for _, m := range gatheredFamilies(t, tn.node.cfg.Registry)["histor_store_pebble_memtable_bytes"].GetMetric() {
		memtables[label(m, "store")] = m.GetGauge().GetValue()
	}
	if memtables["log"] < kinds["log"]["unflushed"] {
		t.Errorf("the log's memtable arenas: %v bytes, less than the %v bytes they hold", memtables["log"], kinds["log"]["unflushed"])
	}
}
