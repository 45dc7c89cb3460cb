// Command testreport reads `go test -json` on stdin and prints what `go test` prints without
// -v (each package's result, and the whole output of every test that failed), then a summary
// of every test that skipped, grouped by the reason it gave, with their count. A suite that
// skips its sandbox tests on a machine without root or runsc then says so at its end instead
// of passing quietly.
//
//	go test -json ./... | go run ./scripts/testreport
//
// It exits 1 if any test or package failed or the stream ended with a test still running.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// event is one line of test2json output.
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Output     string
}

// skipped is one test that skipped and the reason it logged.
type skipped struct{ test, reason string }

type report struct {
	out     io.Writer
	running map[string][]string // package/test → output so far
	skips   []skipped
	failed  bool
}

func main() {
	r := &report{out: os.Stdout, running: map[string][]string{}}
	if err := r.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	r.finish(os.Stderr)
	if r.failed {
		os.Exit(1)
	}
}

func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			// go test prints some failures (a package that does not build) as plain text.
			fmt.Fprintln(r.out, string(line))
			continue
		}
		r.event(e)
	}
	return sc.Err()
}

func (r *report) event(e event) {
	key := e.Package + " " + e.Test
	switch {
	case e.Action == "build-output":
		fmt.Fprint(r.out, e.Output)
	case e.Action == "build-fail":
		r.failed = true
	case e.Test == "":
		r.packageEvent(e)
	case e.Action == "output":
		if !strings.HasPrefix(e.Output, "=== ") {
			r.running[key] = append(r.running[key], e.Output)
		}
	case e.Action == "fail":
		r.failed = true
		for _, l := range r.running[key] {
			fmt.Fprint(r.out, l)
		}
		delete(r.running, key)
	case e.Action == "skip":
		r.skips = append(r.skips, skipped{test: e.Package + "." + e.Test, reason: skipReason(r.running[key])})
		delete(r.running, key)
	case e.Action == "pass":
		delete(r.running, key)
	}
}

// packageEvent prints a package's own lines as go test does without -v.
func (r *report) packageEvent(e event) {
	switch e.Action {
	case "output":
		if o := e.Output; o != "PASS\n" && !strings.HasPrefix(o, "=== ") {
			fmt.Fprint(r.out, o)
		}
	case "fail":
		r.failed = true
	}
}

// skipReason is what a skipped test logged before its "--- SKIP" line.
func skipReason(lines []string) string {
	var why []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		// "file_test.go:12: needs root" → "needs root"
		if _, msg, ok := strings.Cut(t, ": "); ok && strings.Contains(t[:len(t)-len(msg)], ".go:") {
			t = msg
		}
		why = append(why, t)
	}
	if len(why) == 0 {
		return "(no reason given)"
	}
	return strings.Join(why, "; ")
}

// finish prints the output of tests that never ended (a timeout) and the skip summary.
func (r *report) finish(w io.Writer) {
	for key, lines := range r.running {
		r.failed = true
		fmt.Fprintf(r.out, "--- NO RESULT: %s\n", key)
		for _, l := range lines {
			fmt.Fprint(r.out, l)
		}
	}
	if len(r.skips) == 0 {
		return
	}
	byReason := map[string][]string{}
	for _, s := range r.skips {
		byReason[s.reason] = append(byReason[s.reason], s.test)
	}
	reasons := make([]string, 0, len(byReason))
	for k := range byReason {
		reasons = append(reasons, k)
	}
	slices.SortFunc(reasons, func(a, b string) int { return len(byReason[b]) - len(byReason[a]) })
	bar := strings.Repeat("=", 78)
	fmt.Fprintf(w, "\n%s\n%d TESTS SKIPPED: they did not run on this machine and prove nothing here\n%s\n", bar, len(r.skips), bar)
	for _, reason := range reasons {
		tests := byReason[reason]
		slices.Sort(tests)
		fmt.Fprintf(w, "%4d  %s\n", len(tests), reason)
		for i, t := range tests {
			if i == 5 {
				fmt.Fprintf(w, "        … and %d more\n", len(tests)-5)
				break
			}
			fmt.Fprintf(w, "        %s\n", t)
		}
	}
	fmt.Fprintln(w, bar)
}
