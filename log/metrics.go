package log

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/promset"
)

// metrics are the log's histor_log_* series. A nil *metrics (no Registerer)
// records nothing, so the append path pays for metrics only when asked.
type metrics struct {
	set      *promset.Set
	entries  prometheus.Counter
	calls    prometheus.Counter
	refused  prometheus.Counter
	batch    prometheus.Histogram
	syncSecs prometheus.Histogram
	size     prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, l *Log) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		entries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "histor_log_appended_entries_total",
			Help: "Entries appended and acknowledged as durable.",
		}),
		calls: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "histor_log_append_calls_total",
			Help: "Append calls acknowledged as durable.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "histor_log_append_errors_total",
			Help: "Append and SignHead calls answered with an error by the sequencer.",
		}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "histor_log_batch_entries",
			Help:    "Entries in each synced batch (a SignHead alone is a batch of 0).",
			Buckets: append([]float64{0}, prometheus.ExponentialBuckets(1, 4, 9)...),
		}),
		syncSecs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "histor_log_sync_seconds",
			Help:    "Time from applying a batch to its WAL sync being done.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		size: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "histor_log_tree_size",
			Help: "Entries under the latest durable head.",
		}),
	}
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "histor_log_head_age_seconds",
		Help: "Seconds since the latest head's timestamp.",
	}, func() float64 { return l.cfg.Now().Sub(l.Latest().Time).Seconds() })
	stopped := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "histor_log_stopped",
		Help: "1 once a failed write, sync or flush stopped the log (it takes no appends until reopened), else 0.",
	}, func() float64 {
		if l.Stopped() != nil {
			return 1
		}
		return 0
	})
	var err error
	if m.set, err = promset.Register(reg, "log metrics", m.entries, m.calls, m.refused, m.batch, m.syncSecs, m.size, age, stopped); err != nil {
		return nil, err
	}
	m.size.Set(float64(l.latest.Size))
	return m, nil
}

func (m *metrics) unregister() {
	if m != nil {
		m.set.Unregister()
	}
}

// synced records one batch whose sync returned after elapsed.
func (m *metrics) synced(entries int, elapsed time.Duration) {
	if m == nil {
		return
	}
	m.batch.Observe(float64(entries))
	m.syncSecs.Observe(elapsed.Seconds())
}

// answered records the callers of one batch and the tree size after it.
func (m *metrics) answered(reqs []*appendReq, errs []error, size uint64) {
	if m == nil {
		return
	}
	for i, req := range reqs {
		switch {
		case errs != nil && errs[i] != nil:
			m.refused.Inc()
		case len(req.entries) > 0 || len(req.ev) > 0:
			m.calls.Inc()
			m.entries.Add(float64(len(req.entries)))
		}
	}
	m.size.Set(float64(size))
}

// failedAll records every caller of a batch answered with an error.
func (m *metrics) failedAll(n int) {
	if m == nil {
		return
	}
	m.refused.Add(float64(n))
}
