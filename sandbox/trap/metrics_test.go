package trap

import (
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/promset/promtest"
)

// TestPoolCloseUnregisters: a pool's series stay on its registry until Close, and a pool
// made after Close on the same registry registers anew.
func TestPoolCloseUnregisters(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := Config{CAFile: filepath.Join(t.TempDir(), "ca.pem"), Registry: reg}
	first, err := NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewPool(cfg); err == nil {
		t.Fatal("a second pool registered on a registry the first one holds")
	}
	first.Close()
	second, err := NewPool(cfg)
	if err != nil {
		t.Fatalf("a pool after Close: %v", err)
	}
	second.metrics.overloaded.Inc()
	if got := promtest.Value(t, reg, "histor_trap_overloaded_total"); got != 1 {
		t.Fatalf("the second pool's count shows %v, want 1", got)
	}
}
