package crawl_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/registry/registrytest"
	"github.com/histor-observer/histor/internal/promset/promtest"
)

// TestMetrics: a crawl's figures reach the registry it was given.
func TestMetrics(t *testing.T) {
	e := newEnv(t)
	srv := serve(t, stateless(toolServer(baseTools)))
	reg := registrytest.Server(t, []registrytest.Entry{
		{Name: "io.example/up", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: srv.URL + "/mcp"}}},
		{Name: "io.example/templated", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: "https://{tenant}.example.com/mcp"}}},
	})
	pr := prometheus.NewRegistry()
	c := e.crawler(t, reg.URL, func(cfg *crawl.Config) { cfg.Registerer = pr })
	e.run(t, c)
	e.run(t, c)
	got := promtest.Series(t, pr)
	for series, want := range map[string]float64{
		`histor_crawl_labels_issued_total{method="name-threat-match"}`:     1,
		`histor_crawl_labels_issued_total{method="tool-def-pattern-scan"}`: 1,
		`histor_crawl_labels_issued_total{method="tool-set-observation"}`:  1,
		`histor_crawl_runs_total{result="ok"}`:                             2,
		`histor_crawl_targets{status="ok"}`:                                1,
		`histor_crawl_targets{status="templated-url"}`:                     1,
		"histor_crawl_changes_total":                                       0,
		"histor_crawl_duration_seconds":                                    2, // observations
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}
	if len(got) != 8 {
		t.Errorf("series %v", got)
	}
	if _, err := crawl.New(crawl.Config{Registry: reg.URL, AllowPrivateTargets: true, Registerer: pr}, e.log, e.key, e.did, e.st); err == nil {
		t.Error("a second crawler registered the same metrics")
	}
}

// TestCloseUnregistersMetrics: a crawler closed leaves the registry free for
// the next one over the same registry (a node closed and opened again), and
// the next one's figures are its own.
func TestCloseUnregistersMetrics(t *testing.T) {
	e := newEnv(t)
	srv := serve(t, stateless(toolServer(baseTools)))
	reg := registrytest.Server(t, []registrytest.Entry{
		{Name: "io.example/up", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: srv.URL + "/mcp"}}},
	})
	pr := prometheus.NewRegistry()
	first := e.crawler(t, reg.URL, func(cfg *crawl.Config) { cfg.Registerer = pr })
	e.run(t, first)
	first.Close()
	first.Close() // twice is harmless
	if got := promtest.Series(t, pr); len(got) != 0 {
		t.Fatalf("after Close the registry still holds %v", got)
	}
	second := e.crawler(t, reg.URL, func(cfg *crawl.Config) { cfg.Registerer = pr })
	defer second.Close()
	e.run(t, second)
	if got := promtest.Series(t, pr)[`histor_crawl_runs_total{result="ok"}`]; got != 1 {
		t.Errorf("histor_crawl_runs_total{result=ok} = %v after the second crawler's one crawl, want 1", got)
	}
}
