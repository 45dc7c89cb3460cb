package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// results is one bench run read back from go test's output and the header lines runAll wrote.
type results struct {
	Start, Machine, LoadBefore, LoadAfter, Seconds string                        // of the last session
	Sessions                                       []session                     // every session the output holds (more than one after -add)
	Figures                                        map[string]map[string]float64 // benchmark → unit → value
	Skipped                                        map[string]string             // benchmark → reason
	Broken                                         map[string]string             // benchmark → why it failed
	Failed                                         []string                      // packages whose run failed
	Runs                                           []string                      // the commands, in order
}

// session is one invocation of benchreport's runs, from its header lines.
type session struct{ Start, Machine, LoadBefore, LoadAfter, Seconds string }

// describe says when and where the figures were measured.
func (res *results) describe() string {
	if len(res.Sessions) < 2 {
		return fmt.Sprintf("the run that began %s (%s s): %s; load average %s before, %s after",
			or(res.Start, "at an unknown time"), or(res.Seconds, "?"), or(res.Machine, "unknown machine"), or(res.LoadBefore, "unknown"), or(res.LoadAfter, "unknown"))
	}
	parts := make([]string, len(res.Sessions))
	for i, s := range res.Sessions {
		parts[i] = fmt.Sprintf("%s (%s s, load average %s before, %s after)", s.Start, or(s.Seconds, "?"), or(s.LoadBefore, "unknown"), or(s.LoadAfter, "unknown"))
	}
	return fmt.Sprintf("the runs that began %s, the later one's figures replacing the earlier's for the benchmarks it ran: %s",
		strings.Join(parts, " and "), or(res.Machine, "unknown machine"))
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
		res.Sessions = append(res.Sessions, session{Start: v})
		res.Start = v
	case "bench-machine":
		res.Machine = v
	case "bench-load-before":
		res.LoadBefore = v
	case "bench-load-after":
		res.LoadAfter = v
	case "bench-seconds":
		res.Seconds = v
		if n := len(res.Sessions); n > 0 {
			res.Sessions[n-1] = session{res.Start, res.Machine, res.LoadBefore, res.LoadAfter, v}
		}
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
