package observer

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/promset"
	"github.com/histor-observer/histor/sandbox"
)

type metrics struct {
	set          *promset.Set // unregistered by Observer.Close
	observations *prometheus.CounterVec
	seconds      *prometheus.HistogramVec
	running      prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		observations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "histor_sandbox_observations_total", Help: "Package observations finished, by status.",
		}, []string{"status"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "histor_sandbox_stage_seconds", Help: "Time spent in each stage of an observation.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
		}, []string{"stage"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "histor_sandbox_observations_running", Help: "Observations holding a slot now.",
		}),
	}
	set, err := promset.Register(reg, "observer metrics", m.observations, m.seconds, m.running)
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

func (m *metrics) stage(s sandbox.Stage) { m.seconds.WithLabelValues(s.Name).Observe(s.Seconds) }

func (m *metrics) done(s sandbox.Status) { m.observations.WithLabelValues(string(s)).Inc() }
