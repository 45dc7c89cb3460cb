package node

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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

// TestRegistryPassedIn: the node registers with the registry it is given,
// and two nodes may share one.
func TestRegistryPassedIn(t *testing.T) {
	reg := prometheus.NewRegistry()
	for range 2 {
		if _, err := New(Config{DataDir: t.TempDir(), Registry: reg}); err != nil {
			t.Fatal(err)
		}
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range fams {
		found = found || f.GetName() == "go_goroutines"
	}
	if !found {
		t.Error("the node did not register the Go collector with the registry it was given")
	}
}
