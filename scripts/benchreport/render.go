package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// render writes the document's block: the run's machine and load, then one table per section.
func render(res *results) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nWritten by `scripts/bench` from %s.\n", res.describe())
	met, goals := 0, 0
	for _, r := range rows {
		if f, ok := res.value(r); ok {
			if m, has := r.Goal.met(f); has {
				goals++
				if m {
					met++
				}
			}
		}
	}
	fmt.Fprintf(&b, "Goals met: %d of the %d these figures are judged by.", met, goals)
	if len(res.Failed) > 0 {
		fmt.Fprintf(&b, " Runs that failed: %s.", strings.Join(res.Failed, "; "))
	}
	b.WriteString("\n")
	section := ""
	for _, r := range rows {
		if r.Section != section {
			section = r.Section
			fmt.Fprintf(&b, "\n### %s\n\n| benchmark | what | figure | baseline (same run) | ratio | goal | |\n|---|---|---|---|---|---|---|\n", section)
		}
		b.WriteString(res.line(r))
	}
	return b.String()
}

func or(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// value is the figure a row is judged by: the ratio when it has a baseline.
func (res *results) value(r row) (float64, bool) {
	f, ok := res.Figures[r.Bench][r.Metric]
	if !ok {
		return 0, false
	}
	if r.Base == "" {
		return f, true
	}
	base, ok := res.Figures[r.Base][r.BaseMetric]
	if !ok || base == 0 {
		return 0, false
	}
	return f / base, true
}

func (res *results) line(r row) string {
	name := "`" + r.Bench + "`"
	f, ok := res.Figures[r.Bench][r.Metric]
	if !ok {
		return fmt.Sprintf("| %s | %s | %s | | | %s | |\n", name, r.Note, res.missing(r.Bench, r.Metric), r.Goal)
	}
	figure := human(f, r.Metric)
	baseline, ratio := "—", "—"
	if r.Base != "" {
		if bf, ok := res.Figures[r.Base][r.BaseMetric]; ok && bf != 0 {
			baseline = fmt.Sprintf("%s `%s`", human(bf, r.BaseMetric), r.Base)
			ratio = ratioText(f / bf)
		} else {
			baseline = res.missing(r.Base, r.BaseMetric)
		}
	}
	verdict := ""
	if v, ok := res.value(r); ok {
		if m, has := r.Goal.met(v); has {
			verdict = map[bool]string{true: "met", false: "**not met**"}[m]
		}
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |\n", name, r.Note, figure, baseline, ratio, r.Goal, verdict)
}

// missing says why a benchmark's figure is absent.
func (res *results) missing(bench, metric string) string {
	top, _, _ := strings.Cut(bench, "/")
	for _, n := range []string{bench, top} {
		if why, ok := res.Skipped[n]; ok {
			return "skipped: " + why
		}
		if why, ok := res.Broken[n]; ok {
			return "failed: " + why
		}
	}
	if _, ok := res.Figures[bench]; ok {
		return "no " + metric + " reported"
	}
	return "not run"
}

func (g goal) String() string {
	if g.Op == "" {
		return ""
	}
	op := map[string]string{">=": "≥", "<=": "≤"}[g.Op]
	v := strconv.FormatFloat(g.Value, 'f', -1, 64)
	if g.Value >= 1000 && g.Value == math.Trunc(g.Value) {
		v = thousands(int64(g.Value))
	}
	if g.Unit == x {
		return op + " " + v + x
	}
	return op + " " + v + " " + g.Unit
}

func ratioText(r float64) string { return num(r) + x }

// human prints a figure in its unit, nanoseconds scaled to a readable unit.
func human(v float64, unit string) string {
	if unit == "ns/op" || unit == "ns/entry" {
		per := strings.TrimPrefix(unit, "ns")
		switch {
		case v >= 1e9:
			return num(v/1e9) + " s" + per
		case v >= 1e6:
			return num(v/1e6) + " ms" + per
		case v >= 1e3:
			return num(v/1e3) + " µs" + per
		}
	}
	return num(v) + " " + unit
}

// num prints three significant digits, whole numbers with thousands separators.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return thousands(int64(math.Round(v)))
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a == 0:
		return "0"
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
