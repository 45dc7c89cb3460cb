package witness

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/promset"
	"github.com/histor-observer/histor/log/format"
)

type metrics struct {
	requests     *prometheus.CounterVec
	duration     prometheus.Histogram
	cosignatures prometheus.Counter
	forks        *prometheus.CounterVec
	stopped      prometheus.GaugeFunc
	set          *promset.Set // what newMetrics registered; Close unregisters it
}

// newMetrics registers the witness's series on reg; with a nil reg they count into nothing.
// Close unregisters them, so a witness reopened over one registry registers anew.
// stopped is read by histor_witness_stopped.
func newMetrics(reg prometheus.Registerer, stopped func() error) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "histor_witness_add_checkpoint_requests_total",
			Help: "add-checkpoint requests answered, by result.",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "histor_witness_add_checkpoint_duration_seconds",
			Help:    "Time to answer an add-checkpoint request, the synced store write included.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 14),
		}),
		cosignatures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "histor_witness_cosignatures_total",
			Help: "cosignature/v1 lines issued, each after its state was on disk.",
		}),
		forks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "histor_witness_forks_total",
			Help: "Equivocation bundles newly stored, by kind (same-size, failed-proof).",
		}, []string{"kind"}),
		stopped: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "histor_witness_stopped",
			Help: "1 once a failed store write stopped the witness's cosigning (until it is reopened), else 0.",
		}, func() float64 {
			if stopped() != nil {
				return 1
			}
			return 0
		}),
	}
	// Every label value exists from the start, so a rate over a quiet witness reads 0.
	for _, o := range []Outcome{OutcomeCosigned, OutcomeMalformed, OutcomeTooLarge, OutcomeUnknownLog,
		OutcomeBadSignature, OutcomeConflict, OutcomeInconsistent, OutcomeError} {
		m.requests.WithLabelValues(string(o))
	}
	for _, k := range []format.EquivocationKind{format.EquivocationSameSize, format.EquivocationFailedProof} {
		m.forks.WithLabelValues(k.String())
	}
	var err error
	if m.set, err = promset.Register(reg, "witness metrics", m.requests, m.duration, m.cosignatures, m.forks, m.stopped); err != nil {
		return nil, err
	}
	return m, nil
}
