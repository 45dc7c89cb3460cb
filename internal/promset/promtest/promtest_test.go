package promtest

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/tbfail"
)

func registry(t *testing.T) *prometheus.Registry {
	reg := prometheus.NewPedanticRegistry()
	runs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "runs_total", Help: "h"}, []string{"result", "origin"})
	size := prometheus.NewGauge(prometheus.GaugeOpts{Name: "size", Help: "h"})
	took := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "took_seconds", Help: "h"})
	reg.MustRegister(runs, size, took)
	runs.WithLabelValues("ok", "a").Add(2)
	runs.WithLabelValues("ok", "b").Add(3)
	runs.WithLabelValues("error", "a").Add(5)
	runs.WithLabelValues("error", "b") // a series at 0
	size.Set(7)
	took.Observe(1)
	took.Observe(2)
	return reg
}

func TestSeries(t *testing.T) {
	got := Series(t, registry(t))
	want := map[string]float64{
		`runs_total{origin="a",result="ok"}`:    2,
		`runs_total{origin="b",result="ok"}`:    3,
		`runs_total{origin="a",result="error"}`: 5,
		`runs_total{origin="b",result="error"}`: 0,
		`size`:                                  7,
		`took_seconds`:                          2,
	}
	if len(got) != len(want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (there: %v), want %v", k, g, ok, v)
		}
	}
}

func TestSum(t *testing.T) {
	reg := registry(t)
	for _, tc := range []struct {
		labels []string
		want   float64
	}{
		{nil, 10},
		{[]string{"result", "ok"}, 5},
		{[]string{"result", "ok", "origin", "b"}, 3},
		{[]string{"origin", "a"}, 7},
		{[]string{"result", "none"}, 0},
	} {
		if got := Sum(t, reg, "runs_total", tc.labels...); got != tc.want {
			t.Errorf("Sum(runs_total, %q) = %v, want %v", tc.labels, got, tc.want)
		}
	}
	if got := Sum(t, reg, "absent"); got != 0 {
		t.Errorf("Sum of an absent family: %v", got)
	}
}

func TestValue(t *testing.T) {
	reg := registry(t)
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"runs_total", []string{"result", "error", "origin", "b"}, 0}, // a series at 0
		{"runs_total", []string{"origin", "b", "result", "ok"}, 3},
		{"size", nil, 7},
		{"took_seconds", nil, 2},
	} {
		var v float64
		if msg := tbfail.Message(t, func(tb testing.TB) { v = Value(tb, reg, tc.name, tc.labels...) }); msg != "" || v != tc.want {
			t.Errorf("Value(%s, %q) = %v, failed %q; want %v", tc.name, tc.labels, v, msg, tc.want)
		}
	}
	for _, tc := range []struct {
		name   string
		labels []string
		msg    string
	}{
		{"runs_total", []string{"result", "ok"}, `2 series of runs_total have the labels ["result" "ok"]`},
		{"runs_total", []string{"result", "none"}, `0 series of runs_total have the labels ["result" "none"]`},
		{"absent", nil, `0 series of absent`},
		{"runs_total", []string{"result"}, "not name, value pairs"},
	} {
		msg := tbfail.Message(t, func(tb testing.TB) { Value(tb, reg, tc.name, tc.labels...) })
		if !strings.Contains(msg, tc.msg) {
			t.Errorf("Value(%s, %q) failed with %q, want %q", tc.name, tc.labels, msg, tc.msg)
		}
	}
	if msg := tbfail.Message(t, func(tb testing.TB) { Value(tb, reg, "absent") }); !strings.Contains(msg, `size`) {
		t.Errorf("a series missing failed with %q, want it named with what is there", msg)
	}
	if msg := tbfail.Message(t, func(tb testing.TB) { Sum(tb, reg, "runs_total", "result") }); msg == "" {
		t.Error("Sum with a label name and no value did not fail")
	}
}
