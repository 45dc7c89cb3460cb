package mirror

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	syncs      *prometheus.CounterVec
	refused    *prometheus.CounterVec
	entries    prometheus.Counter
	bytes      prometheus.Counter
	forks      prometheus.Counter
	unreadable prometheus.Counter
	pending    prometheus.Counter
	stopped    prometheus.GaugeFunc
}

// newMetrics makes the store's series; stopped is read by histor_mirror_stopped.
func newMetrics(stopped func() error) *metrics {
	return &metrics{
		stopped: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "histor_mirror_stopped",
			Help: "1 once a failed store write stopped the mirror's writes (until it is reopened), else 0."}, func() float64 {
			if stopped() != nil {
				return 1
			}
			return 0
		}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "histor_mirror_syncs_total",
			Help: "Mirror syncs that did not refuse their source, by outcome (ok, unavailable, forked)."}, []string{"result"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "histor_mirror_refused_total",
			Help: "Mirror sources refused, by reason (signature, malformed, oversized, truncated, mismatch, bound, stale)."}, []string{"reason"}),
		entries: prometheus.NewCounter(prometheus.CounterOpts{Name: "histor_mirror_entries_total",
			Help: "Log entries mirrored, checked against their observer's signed checkpoint."}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "histor_mirror_bundle_bytes_total",
			Help: "Bytes of entry bundles read from mirror sources."}),
		forks: prometheus.NewCounter(prometheus.CounterOpts{Name: "histor_mirror_forks_total",
			Help: "Observers whose checkpoints the mirror found to fork, with evidence kept."}),
		unreadable: prometheus.NewCounter(prometheus.CounterOpts{Name: "histor_mirror_unreadable_labels_total",
			Help: "Mirrored observation labels that could not be read as observations (kept as entries, not indexed)."}),
		pending: prometheus.NewCounter(prometheus.CounterOpts{Name: "histor_mirror_pending_total",
			Help: "Mirrored observation labels that had to wait for their subject descriptor."}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.syncs, m.refused, m.entries, m.bytes, m.forks, m.unreadable, m.pending, m.stopped}
}
