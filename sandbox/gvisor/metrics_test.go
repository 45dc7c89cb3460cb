package gvisor

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/promset/promtest"
)

// TestCloseUnregisters: a runtime's series stay on its registry until Close, and a runtime
// made after Close on the same registry registers anew (before, the second's counters were
// left unregistered, so what it counted was never shown).
func TestCloseUnregisters(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := Config{Runsc: "/bin/true", StateDir: t.TempDir(), Registerer: reg}
	first, err := newRuntime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newRuntime(cfg); err == nil {
		t.Fatal("a second runtime registered on a registry the first one holds")
	}
	first.Close()
	second, err := newRuntime(cfg)
	if err != nil {
		t.Fatalf("a runtime after Close: %v", err)
	}
	second.metrics.swept.Inc()
	if got := promtest.Value(t, reg, "histor_gvisor_swept_total"); got != 1 {
		t.Fatalf("the second runtime's sweep shows %v, want 1", got)
	}
}
