package main

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// results is one bench run read back from go test's output and the header lines runAll wrote.
type results struct {
	Start, Machine, LoadBefore, LoadAfter, Seconds string
	Figures                                        map[string]map[string]float64 // benchmark → unit → value
	Skipped                                        map[string]string             // benchmark → reason
	Broken                                         map[string]string             // benchmark → why it failed
	Failed                                         []string                      // packages whose run failed
	Runs                                           []string                      // the commands, in order
}

var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(-\d+)?\s+(\d+)\s+(.*)$`)

func parse(r io.Reader) (*results, error) {
	res := &results{Figures: map[string]map[string]float64{}, Skipped: map[string]string{}, Broken: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	// go test prints a skip's or a failure's reason on the indented lines after its
	// "--- SKIP" or "--- FAIL" line; into is where the next such line goes.
	var into map[string]string
	var name string
	for sc.Scan() {
		line := sc.Text()
		t := strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, ": "); ok && strings.HasPrefix(k, "bench-") {
			res.header(k, v)
			continue
		}
		if m := benchLine.FindStringSubmatch(line); m != nil {
			res.Figures[m[1]] = figures(m[4])
			into = nil
			continue
		}
		if n, ok := strings.CutPrefix(t, "--- SKIP: Benchmark"); ok {
			into, name = res.Skipped, trimProcs(strings.Fields(n)[0])
			into[name] = "no reason given"
			continue
		}
		if n, ok := strings.CutPrefix(t, "--- FAIL: Benchmark"); ok {
			into, name = res.Broken, trimProcs(strings.Fields(n)[0])
			into[name] = "no reason given"
			continue
		}
		if into != nil && strings.HasPrefix(line, "    ") && strings.Contains(t, ".go:") {
			if into[name] == "no reason given" {
				into[name] = reason(t)
			}
			continue
		}
		into = nil
	}
	return res, sc.Err()
}

func (res *results) header(k, v string) {
	switch k {
	case "bench-start":
		res.Start = v
	case "bench-machine":
		res.Machine = v
	case "bench-load-before":
		res.LoadBefore = v
	case "bench-load-after":
		res.LoadAfter = v
	case "bench-seconds":
		res.Seconds = v
	case "bench-run":
		res.Runs = append(res.Runs, v)
	case "bench-failed":
		res.Failed = append(res.Failed, v)
	}
}

// figures reads "123 ns/op  45 B/op  10561 proofs/s" into unit → value.
func figures(s string) map[string]float64 {
	f := strings.Fields(s)
	out := map[string]float64{}
	for i := 0; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			break
		}
		out[f[i+1]] = v
	}
	return out
}

var procsSuffix = regexp.MustCompile(`-\d+$`)

func trimProcs(name string) string { return procsSuffix.ReplaceAllString(name, "") }

// reason is a logged line without its file:line prefix.
func reason(t string) string {
	if _, msg, ok := strings.Cut(t, ": "); ok {
		return msg
	}
	return t
}
