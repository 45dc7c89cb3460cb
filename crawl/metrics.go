package crawl

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/promset"
)

// metrics are the crawl's Prometheus metrics. They are always kept, and
// registered only with the registry Config.Registerer names, from New to
// Close: registration is strict, so two crawlers on one registry need it
// wrapped with a label that tells them apart (the node adds its origin).
type metrics struct {
	set *promset.Set // nil registerer: registered nowhere

	targets  *prometheus.GaugeVec   // by status, of the latest crawl
	duration prometheus.Histogram   // whole crawls
	labels   *prometheus.CounterVec // by method
	changes  prometheus.Counter
	runs     *prometheus.CounterVec // by result: ok or error
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		targets: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "histor_crawl_targets", Help: "Targets of the latest crawl, by the status it gave them.",
		}, []string{"status"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "histor_crawl_duration_seconds", Help: "How long whole crawls took.",
			// A crawl of a few targets takes seconds, of the whole registry an hour or two.
			Buckets: prometheus.ExponentialBuckets(1, 4, 8),
		}),
		labels: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "histor_crawl_labels_issued_total", Help: "Labels appended to the log, by method.",
		}, []string{"method"}),
		changes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "histor_crawl_changes_total", Help: "Change records: a target's tool-set digest moved.",
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "histor_crawl_runs_total", Help: "Crawls run, by result (ok or error).",
		}, []string{"result"}),
	}
	var err error
	if m.set, err = promset.Register(reg, "crawl metrics", m.targets, m.duration, m.labels, m.changes, m.runs); err != nil {
		return nil, err
	}
	return m, nil
}

// unregister removes the registered metrics from the registry, once.
func (m *metrics) unregister() { m.set.Unregister() }

// record adds one finished crawl.
func (m *metrics) record(sum *Summary, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.runs.WithLabelValues(result).Inc()
	if sum == nil {
		return
	}
	m.duration.Observe(sum.Duration.Seconds())
	m.targets.Reset()
	for status, n := range sum.ByStatus {
		m.targets.WithLabelValues(status).Set(float64(n))
	}
	for method, n := range sum.ByMethod {
		m.labels.WithLabelValues(method[strings.LastIndex(method, ":")+1:]).Add(float64(n))
	}
	m.changes.Add(float64(sum.Changes))
}
