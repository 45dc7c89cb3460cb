package log

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/pebbledb"
	"github.com/histor-observer/histor/internal/promset/promtest"
)

// TestMetrics: the histor_log_* series count what was acknowledged, go to
// the registry given, and leave it on Close so a reopened log registers
// again.
func TestMetrics(t *testing.T) {
	clock := &stepClock{t: time.Date(2026, 9, 23, 9, 0, 0, 0, time.UTC)}
	reg := prometheus.NewPedanticRegistry()
	cfg := testConfig(t.TempDir())
	cfg.Now, cfg.Registerer = clock.now, reg
	l := openTest(t, cfg)
	appendN(t, l, 0, 3)
	appendN(t, l, 3, 2)
	if _, err := l.Append(context.Background(), []Entry{testEntry(0)}, nil); err == nil {
		t.Fatal("a logged id appended again")
	}
	clock.t = clock.t.Add(90 * time.Second)
	want := map[string]float64{
		"histor_log_append_calls_total":     2,
		"histor_log_append_errors_total":    1,
		"histor_log_appended_entries_total": 5,
		"histor_log_head_age_seconds":       90,
		"histor_log_tree_size":              5,
		"histor_log_batch_entries":          3, // batches synced
		"histor_log_sync_seconds":           3,
		"histor_log_stopped":                0,
	}
	got := promtest.Series(t, reg)
	// Pebble's memory: the appended entries wait in the memtables (the live WAL's bytes).
	if m := l.PebbleMemory(); m.Unflushed <= 0 || m.Memtables < m.Unflushed {
		t.Errorf("PebbleMemory: %+v after 5 entries with their tiles and heads", m)
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v", name, got[name], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want exactly %v", got, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(promtest.Series(t, reg)); n != 0 {
		t.Fatalf("%d series left after Close", n)
	}
	if m := l.PebbleMemory(); m != (pebbledb.Mem{}) {
		t.Fatalf("PebbleMemory after Close: %+v", m)
	}
	openTest(t, cfg)
	if got := promtest.Series(t, reg)["histor_log_tree_size"]; got != 5 {
		t.Fatalf("tree size after reopening: %v", got)
	}
}

// TestNoRegistererNoMetrics: without a Registerer the log registers
// nothing, and above all nothing in the global registry.
func TestNoRegistererNoMetrics(t *testing.T) {
	before, _ := prometheus.DefaultGatherer.Gather()
	l := openTest(t, testConfig(t.TempDir()))
	appendN(t, l, 0, 2)
	after, _ := prometheus.DefaultGatherer.Gather()
	if l.metrics != nil || len(after) != len(before) {
		t.Fatalf("metrics %v; the global registry went from %d to %d families", l.metrics, len(before), len(after))
	}
}
