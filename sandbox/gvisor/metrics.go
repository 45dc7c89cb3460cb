package gvisor

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/promset"
)

type metrics struct {
	set     *promset.Set // unregistered by Runtime.Close
	runs    *prometheus.CounterVec
	seconds prometheus.Histogram
	swept   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "histor_gvisor_runs_total", Help: "Sandbox runs by how they ended.",
		}, []string{"end"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "histor_gvisor_run_seconds", Help: "Sandbox run time from start to cleanup.",
			Buckets: prometheus.ExponentialBuckets(0.1, 2, 12),
		}),
		swept: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "histor_gvisor_swept_total", Help: "Stale sandboxes and cgroups removed by sweeps.",
		}),
	}
	set, err := promset.Register(reg, "gvisor metrics", m.runs, m.seconds, m.swept)
	if err != nil {
		return nil, err
	}
	m.set = set
	return m, nil
}

// unregister takes the series off the registry, so one opened later on it registers anew.
func (m *metrics) unregister() {
	if m != nil {
		m.set.Unregister()
	}
}
