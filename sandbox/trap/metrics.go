package trap

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/promset"
)

// metrics are shared by a Pool's networks. Nil fields are never touched.
type metrics struct {
	set        *promset.Set           // unregistered by Pool.Close
	records    *prometheus.CounterVec // by protocol
	overloaded prometheus.Counter
	handlers   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "histor_trap_records_total", Help: "Records the traps wrote, by protocol.",
		}, []string{"protocol"}),
		overloaded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "histor_trap_overloaded_total", Help: "TCP connections closed because every handler was busy.",
		}),
		handlers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "histor_trap_handlers", Help: "TCP trap handlers running now, all networks.",
		}),
	}
	set, err := promset.Register(reg, "trap metrics", m.records, m.overloaded, m.handlers)
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
