// Command benchreport runs every benchmark of the repository and writes the tables of
// docs/PERFORMANCE.md between its markers: each figure beside its baseline from the same run,
// the ratio computed here, the goal and whether it was met, with the machine and its load.
// scripts/bench runs it; the raw go test output is kept beside the document.
//
//	go run ./scripts/benchreport                  run everything, write the document
//	go run ./scripts/benchreport -only 'Sync|Append'
//	go run ./scripts/benchreport -from docs/bench-output.txt   re-render a kept run
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
)

const (
	beginMarker = "<!-- bench:begin -->"
	endMarker   = "<!-- bench:end -->"
)

func main() {
	doc := flag.String("doc", "docs/PERFORMANCE.md", "the document whose marked block is written")
	scaling := flag.String("scaling", "docs/SCALING.md", "the document whose paper federation is computed from this run")
	out := flag.String("out", "docs/bench-output.txt", "where the raw go test output is kept")
	only := flag.String("only", "", "run only the benchmarks whose top-level name matches `REGEX`; the other rows say not run")
	from := flag.String("from", "", "render from a kept raw output `FILE` instead of running")
	add := flag.Bool("add", false, "with -only: add the run to the kept output (-out), in place of what it held for those benchmarks, and render the whole")
	flag.Parse()
	if *add && (*only == "" || *from != "") {
		fmt.Fprintln(os.Stderr, "benchreport: -add needs -only and no -from")
		os.Exit(2)
	}
	if err := mainErr(*doc, *scaling, *out, *only, *from, *add); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func mainErr(doc, scaling, out, only, from string, add bool) error {
	var raw []byte
	if from != "" {
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		raw = b
	} else {
		var filter *regexp.Regexp
		if only != "" {
			re, err := regexp.Compile(only)
			if err != nil {
				return fmt.Errorf("-only: %w", err)
			}
			filter = re
		}
		b, err := runAll(filter, os.Stderr)
		if err != nil {
			return err
		}
		raw = b
		if add {
			kept, err := os.ReadFile(out)
			if err != nil {
				return fmt.Errorf("-add: %w", err)
			}
			raw = append(dropFailures(kept, filter), b...)
		}
		if err := os.WriteFile(out, raw, 0o644); err != nil {
			return err
		}
	}
	res, err := parse(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	block := render(res)
	fmt.Print(block)
	if err := writeBlock(doc, beginMarker, endMarker, block); err != nil {
		return err
	}
	return writeBlock(scaling, scalingBegin, scalingEnd, renderScaling(res))
}

// writeBlock puts block between a document's markers.
func writeBlock(path, begin, end, block string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	updated, err := replaceBlock(string(old), begin, end, block)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(updated), 0o644)
}

// runAll runs every run in turn, recording the machine and its load in the output's header
// lines (which parse reads back), and returns the whole output.
func runAll(filter *regexp.Regexp, progress io.Writer) ([]byte, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	start := time.Now()
	fmt.Fprintf(&buf, "bench-start: %s\nbench-machine: %s\nbench-load-before: %s\n",
		start.UTC().Format(time.RFC3339), machine(), loadAverage())
	for _, r := range runs {
		benches := r.Benches
		if filter != nil {
			benches = nil
			for _, b := range r.Benches {
				if filter.MatchString(b) {
					benches = append(benches, b)
				}
			}
		}
		if len(benches) == 0 {
			continue
		}
		args := []string{"test", "-run", "^$", "-bench", "^Benchmark(" + strings.Join(benches, "|") + ")$",
			"-benchtime", r.Benchtime, "-benchmem", "-count", "1", "-timeout", "60m", r.Pkg}
		fmt.Fprintf(progress, "benchreport: go %s\n", strings.Join(args, " "))
		fmt.Fprintf(&buf, "bench-run: go %s\nbench-load: %s\n", strings.Join(args, " "), loadAverage())
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), r.Env...)
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.MultiWriter(&b, progress), io.MultiWriter(&b, progress)
		err := cmd.Run()
		buf.Write(b.Bytes())
		if err != nil {
			// A failed benchmark is reported in its rows; the others still count.
			fmt.Fprintf(&buf, "bench-failed: %s %s: %v\n", r.Pkg, strings.Join(benches, ","), err)
		}
	}
	fmt.Fprintf(&buf, "bench-load-after: %s\nbench-seconds: %.0f\n", loadAverage(), time.Since(start).Seconds())
	return buf.Bytes(), nil
}

// dropFailures removes from a kept output the failures of runs whose benchmarks filter
// selects again; their new figures, parsed later, replace the old.
func dropFailures(kept []byte, filter *regexp.Regexp) []byte {
	var out []byte
	for _, line := range bytes.SplitAfter(kept, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("bench-failed: ")); ok {
			if f := strings.Fields(string(rest)); len(f) > 1 && anyMatches(filter, strings.Split(strings.TrimSuffix(f[1], ":"), ",")) {
				continue
			}
		}
		out = append(out, line...)
	}
	return out
}

func anyMatches(re *regexp.Regexp, names []string) bool {
	for _, n := range names {
		if re.MatchString(n) {
			return true
		}
	}
	return false
}

// moduleRoot is the directory of the go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// machine names the CPU, its count and the Go toolchain.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d cores, %s %s/%s", model, runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// loadAverage is the 1-, 5- and 15-minute load average.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// replaceBlock puts block between the markers begin and end.
func replaceBlock(doc, begin, end, block string) (string, error) {
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %s … %s block", begin, end)
	}
	return doc[:i+len(begin)] + "\n" + block + doc[j:], nil
}
