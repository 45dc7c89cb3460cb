package submit

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/promset"
)

// metrics are the Submitter's histor_witness_submit_* series, labelled by the witness's
// key name (ParseWitnesses keeps them distinct). A nil *metrics records nothing.
type metrics struct {
	set         *promset.Set
	requests    *prometheus.CounterVec
	requestSecs *prometheus.HistogramVec
	submitSecs  *prometheus.HistogramVec
	inconsist   *prometheus.CounterVec
	acked       *prometheus.GaugeVec
	latestSize  prometheus.Gauge
	latestSigs  prometheus.Gauge
	witnessed   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, ws []Witness) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "histor_witness_submit_requests_total",
			Help: "add-checkpoint requests made, by witness and HTTP status (\"error\" when no answer came).",
		}, []string{"witness", "code"}),
		requestSecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "histor_witness_submit_request_seconds",
			Help:    "Time from sending one add-checkpoint request to having read its answer.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"witness"}),
		submitSecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "histor_witness_submit_seconds",
			Help:    "Time one checkpoint's submission to one witness took, retries and waits included, by result.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"witness", "result"}),
		inconsist: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "histor_witness_submit_inconsistencies_total",
			Help: "Submissions a witness answered as inconsistent with what it cosigned before (409 without a size, or 422).",
		}, []string{"witness"}),
		acked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "histor_witness_submit_acknowledged_size",
			Help: "The tree size each witness last said it cosigned.",
		}, []string{"witness"}),
		latestSize: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "histor_witness_submit_latest_size",
			Help: "Size of the newest checkpoint submitted.",
		}),
		latestSigs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "histor_witness_submit_latest_cosignatures",
			Help: "Cosignatures collected for the newest checkpoint submitted.",
		}),
		witnessed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "histor_witness_submit_witnessed_size",
			Help: "Size of the newest checkpoint whose cosignatures met the policy's quorum.",
		}),
	}
	var err error
	if m.set, err = promset.Register(reg, "witness submission metrics",
		m.requests, m.requestSecs, m.submitSecs, m.inconsist, m.acked, m.latestSize, m.latestSigs, m.witnessed); err != nil {
		return nil, err
	}
	for _, w := range ws {
		// Present from the start, so a witness that never answers shows as 0.
		m.inconsist.WithLabelValues(w.Cosigner.Name)
		m.acked.WithLabelValues(w.Cosigner.Name)
	}
	return m, nil
}

func (m *metrics) unregister() {
	if m != nil {
		m.set.Unregister()
	}
}

func (m *metrics) request(witness, code string, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(witness, code).Inc()
	m.requestSecs.WithLabelValues(witness).Observe(d.Seconds())
}

func (m *metrics) submission(witness string, err error, d time.Duration, acked uint64) {
	if m == nil {
		return
	}
	r := result(err)
	m.submitSecs.WithLabelValues(witness, r).Observe(d.Seconds())
	if r == "inconsistent" {
		m.inconsist.WithLabelValues(witness).Inc()
	}
	m.acked.WithLabelValues(witness).Set(float64(acked))
}

// result names an outcome for the result label.
func result(err error) string {
	var (
		inc *InconsistencyError
		st  *StatusError
		ans *AnswerError
		un  *UnavailableError
	)
	switch {
	case err == nil:
		return "cosigned"
	case errors.As(err, &inc):
		return "inconsistent"
	case errors.Is(err, ErrStale):
		return "stale"
	case errors.As(err, &st), errors.As(err, &ans):
		return "refused"
	case errors.As(err, &un):
		return "unavailable"
	}
	return "error"
}

func (m *metrics) setLatest(size uint64, cosignatures int, witnessed bool) {
	if m == nil {
		return
	}
	m.latestSize.Set(float64(size))
	m.latestSigs.Set(float64(cosignatures))
	if witnessed {
		m.witnessed.Set(float64(size))
	}
}
