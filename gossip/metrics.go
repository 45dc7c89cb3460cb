package gossip

import (
	"fmt"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/promset"
)

// metrics are the histor_gossip_* series; a nil *metrics records nothing.
type metrics struct {
	set      *promset.Set // unregistered on Close
	messages *prometheus.CounterVec
	pulls    *prometheus.CounterVec
	requests *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "histor_gossip_messages_total",
			Help: "Gossip messages validated, by topic and verdict (accept, reject, ignore).",
		}, []string{"topic", "verdict"}),
		pulls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "histor_gossip_head_pulls_total",
			Help: "Latest-head pulls from federation peers, by outcome.",
		}, []string{"outcome"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "histor_gossip_requests_total",
			Help: "Request/response exchanges served, by protocol and status.",
		}, []string{"protocol", "status"}),
	}
	set, err := promset.Register(reg, "gossip metrics", m.messages, m.pulls, m.requests)
	if err != nil {
		return nil, err
	}
	m.set = set
	return m, nil
}

// unregister takes the series off the registry, so a node opened later on it registers anew.
func (m *metrics) unregister() {
	if m != nil {
		m.set.Unregister()
	}
}

func (m *metrics) message(topic string, v pubsub.ValidationResult) {
	if m == nil {
		return
	}
	verdict := map[pubsub.ValidationResult]string{
		pubsub.ValidationAccept: "accept", pubsub.ValidationReject: "reject", pubsub.ValidationIgnore: "ignore",
	}[v]
	m.messages.WithLabelValues(topic, verdict).Inc()
}

func (m *metrics) pull(outcome string) {
	if m != nil {
		m.pulls.WithLabelValues(outcome).Inc()
	}
}

func (m *metrics) request(proto string, status int) {
	if m != nil {
		m.requests.WithLabelValues(proto, fmt.Sprint(status)).Inc()
	}
}
