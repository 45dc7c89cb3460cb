package gossip

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/promset/promtest"
)

// TestMetricsLeaveOnClose: a closed node takes its series off the registry, so a node opened
// after it on the same registry registers anew (a node's parts are closed and opened again
// over one registry).
func TestMetricsLeaveOnClose(t *testing.T) {
	o := newObserver(t, 0)
	reg := prometheus.NewRegistry()
	for i := range 2 {
		cfg := testConfig(o, []*observer{o}, nil, &fakeLog{})
		cfg.Registerer = reg
		n, err := New(cfg)
		if err != nil {
			t.Fatalf("opening node %d on the registry: %v", i, err)
		}
		n.metrics.messages.WithLabelValues("heads", "accept").Inc()
		if got := promtest.Value(t, reg, "histor_gossip_messages_total", "verdict", "accept"); got != 1 {
			t.Fatalf("node %d: messages %v, want 1", i, got)
		}
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		for name := range promtest.Series(t, reg) {
			if strings.HasPrefix(name, "histor_gossip_") {
				t.Fatalf("node %d closed, %s is still registered", i, name)
			}
		}
	}
}
