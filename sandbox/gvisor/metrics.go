package gvisor

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
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
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.runs, m.seconds, m.swept} {
		if err := reg.Register(c); err != nil {
			var dup prometheus.AlreadyRegisteredError
			if !errors.As(err, &dup) {
				return nil, fmt.Errorf("registering gvisor metrics: %w", err)
			}
		}
	}
	return m, nil
}
