package queue

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/promset"
)

// Reasons a result is rejected, the values of the reason label.
const (
	rejectMalformed   = "malformed"
	rejectWorker      = "worker"      // published under another worker's key
	rejectUnknownJob  = "unknown-job" // not issued here, or no longer pending
	rejectTarget      = "target"
	rejectBinding     = "binding"
	rejectEvidence    = "evidence"
	rejectObservation = "observation" // not an observation of the job's package
)

type metrics struct {
	set      *promset.Set
	all      []prometheus.Collector
	enqueued prometheus.Counter
	done     prometheus.Counter
	poisoned prometheus.Counter
	rejected *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, depth func() float64) (*metrics, error) {
	m := &metrics{
		enqueued: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "histor_queue_jobs_enqueued_total", Help: "Jobs queued (duplicates not counted).",
		}),
		done: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "histor_queue_jobs_done_total", Help: "Jobs whose result the handler accepted.",
		}),
		poisoned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "histor_queue_jobs_poisoned_total", Help: "Jobs that failed on every delivery.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "histor_queue_results_rejected_total", Help: "Results dropped unsigned, by reason.",
		}, []string{"reason"}),
	}
	m.all = []prometheus.Collector{m.enqueued, m.done, m.poisoned, m.rejected,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "histor_queue_depth", Help: "Jobs in the jobs stream: queued, running or awaiting redelivery.",
		}, depth)}
	var err error
	if m.set, err = promset.Register(reg, "queue metrics", m.all...); err != nil {
		return nil, err
	}
	return m, nil
}

// unregister frees the names so a reopened queue can register again.
func (m *metrics) unregister() { m.set.Unregister() }
