// Package promtest reads what a Prometheus registry holds, for tests: every series by its
// name and labels, the one series with some labels, or the sum of a family's series.
package promtest

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Series is every series g gathers, keyed as the text exposition names it: the family's name,
// then its labels in braces sorted by name (`runs_total{result="ok"}`), no braces for a series
// without labels. A counter's or gauge's value; a histogram's or summary's sample count.
func Series(t testing.TB, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			out[key(f.GetName(), m)] = value(m)
		}
	}
	return out
}

// Value is the one series of family name whose labels include each pair of want (a label's
// name, then its value). The test fails when no series or more than one matches, so a value
// of 0 is a series at 0, never one missing.
func Value(t testing.TB, g prometheus.Gatherer, name string, want ...string) float64 {
	t.Helper()
	if len(want)%2 != 0 {
		t.Fatalf("promtest.Value(%s): labels %q are not name, value pairs", name, want)
	}
	var found []float64
	for _, m := range family(t, g, name) {
		if hasLabels(m, want) {
			found = append(found, value(m))
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d series of %s have the labels %q; want one among %v", len(found), name, want, slices.Sorted(maps.Keys(Series(t, g))))
	}
	return found[0]
}

// Sum is the sum of the series of family name whose labels include each pair of want (a
// label's name, then its value); 0 when none does.
func Sum(t testing.TB, g prometheus.Gatherer, name string, want ...string) float64 {
	t.Helper()
	if len(want)%2 != 0 {
		t.Fatalf("promtest.Sum(%s): labels %q are not name, value pairs", name, want)
	}
	var sum float64
	for _, m := range family(t, g, name) {
		if hasLabels(m, want) {
			sum += value(m)
		}
	}
	return sum
}

// family is the series of family name in g; none when g has no such family.
func family(t testing.TB, g prometheus.Gatherer, name string) []*dto.Metric {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()
		}
	}
	return nil
}

func key(name string, m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return name
	}
	pairs := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		pairs = append(pairs, l.GetName()+`="`+l.GetValue()+`"`)
	}
	slices.Sort(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	case m.Summary != nil:
		return float64(m.GetSummary().GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}

func hasLabels(m *dto.Metric, want []string) bool {
	for i := 0; i < len(want); i += 2 {
		if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
			return l.GetName() == want[i] && l.GetValue() == want[i+1]
		}) {
			return false
		}
	}
	return true
}
