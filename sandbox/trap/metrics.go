package trap

import "github.com/prometheus/client_golang/prometheus"

// metrics are shared by a Pool's networks. Nil fields are never touched.
type metrics struct {
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
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.records, m.overloaded, m.handlers} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
