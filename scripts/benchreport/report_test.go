package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestEveryBenchmarkRuns: every func Benchmark of the repository is in exactly one run, in
// its own package, and every run and row names a benchmark that exists; a benchmark added
// without a place in the document fails here.
func TestEveryBenchmarkRuns(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]string{} // "./pkg Name" → file
	decl := regexp.MustCompile(`(?m)^func Benchmark(\w+)\(b \*testing\.B\)`)
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			found["./"+filepath.ToSlash(rel)+" "+m[1]] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) < 50 {
		t.Fatalf("found %d benchmarks: the walk is wrong", len(found))
	}
	listed := map[string]int{}
	tops := map[string]bool{}
	for _, r := range runs {
		for _, b := range r.Benches {
			listed[r.Pkg+" "+b]++
			tops[b] = true
		}
	}
	for k, file := range found {
		if listed[k] != 1 {
			t.Errorf("%s (%s) is in %d runs, want 1", k, file, listed[k])
		}
	}
	for k := range listed {
		if _, ok := found[k]; !ok {
			t.Errorf("run lists %s, which does not exist", k)
		}
	}
	inRows := map[string]bool{}
	for _, r := range rows {
		for _, b := range []string{r.Bench, r.Base} {
			if b == "" {
				continue
			}
			top, _, _ := strings.Cut(b, "/")
			if !tops[top] {
				t.Errorf("row %q names %s, which no run runs", r.Note, b)
			}
			inRows[top] = true
		}
	}
	for top := range tops {
		if !inRows[top] {
			t.Errorf("%s runs but no row reports it", top)
		}
	}
}

const sample = `bench-start: 2026-12-03T12:00:00Z
bench-machine: Test CPU, 2 cores, go1.26.8 linux/amd64
bench-load-before: 0.50 0.40 0.30
bench-run: go test -run ^$ -bench ^(Sync|SyncBaselinePebble)$ ./node/mirror
goos: linux
BenchmarkSync-2                        3   1440000000 ns/op   48000 ns/entry   2042 bytes/entry   30000 entries   12 B/op   1 allocs/op
BenchmarkSyncBaselinePebble-2          3    288000000 ns/op    9600 ns/entry
BenchmarkHTTPReadAPI20k/servers-2       100   9000 ns/op   5000 req/s   18.5 p99-ms
BenchmarkHTTPReadAPI20k/servers-bare-2  100   2000 ns/op  20000 req/s
--- SKIP: BenchmarkRunTrue
    bench_test.go:20: needs root and runsc
--- FAIL: BenchmarkQueue/queue
    queue_test.go:9: status 503
bench-failed: ./sandbox/queue exit status 1
bench-load-after: 1.50 1.00 0.50
bench-seconds: 42
`

func TestParseAndRender(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Figures["Sync"]["ns/entry"]; got != 48000 {
		t.Errorf("Sync ns/entry = %v", got)
	}
	if got := res.Figures["HTTPReadAPI20k/servers-bare"]["req/s"]; got != 20000 {
		t.Errorf("servers-bare req/s = %v (sub-benchmark names must keep their own dashes)", got)
	}
	if res.Skipped["RunTrue"] != "needs root and runsc" || res.Broken["Queue/queue"] != "status 503" {
		t.Errorf("skipped %v, broken %v", res.Skipped, res.Broken)
	}
	out := render(res)
	for _, want := range []string{
		"the run that began 2026-12-03T12:00:00Z (42 s): Test CPU, 2 cores", "load average 0.50 0.40 0.30 before, 1.50 1.00 0.50 after",
		"| `Sync` | mirroring a peer's log: fetch, verify and index one entry, beside a raw Pebble batch of the same bytes | 48.0 µs/entry | 9.60 µs/entry `SyncBaselinePebble` | 5.00× |",
		"| `HTTPReadAPI20k/servers` | /api/v1/servers over 20,000 servers, beside bare answers of the same bytes | 5,000 req/s | 20,000 req/s `HTTPReadAPI20k/servers-bare` | 0.25× |",
		"| 18.5 p99-ms | — | — | ≤ 20 ms | met |",
		"skipped: needs root and runsc", "failed: status 503", "Runs that failed: ./sandbox/queue exit status 1",
		"| `Open1M` | opening a 1M-leaf log | not run |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks %q", want)
		}
	}
	if !strings.Contains(out, "Goals met: 1 of the 1 these figures") {
		t.Errorf("goal count wrong:\n%s", out)
	}
}

func TestReplaceBlock(t *testing.T) {
	doc := "# P\n\nintro\n" + beginMarker + "\nold table\n" + endMarker + "\n\nprose\n"
	got, err := replaceBlock(doc, beginMarker, endMarker, "\nnew table\n")
	if err != nil {
		t.Fatal(err)
	}
	if got != "# P\n\nintro\n"+beginMarker+"\n\nnew table\n"+endMarker+"\n\nprose\n" {
		t.Errorf("got %q", got)
	}
	if _, err := replaceBlock("no markers", beginMarker, endMarker, "x"); err == nil {
		t.Error("a document without markers was accepted")
	}
}

// TestRunOne runs one real benchmark through runAll and reads its figure back.
func TestRunOne(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a benchmark package; skipped under -short")
	}
	raw, err := runAll(regexp.MustCompile(`^Derive$`), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	res, err := parse(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Figures["Derive"]["ns/op"] <= 0 || res.Machine == "" || res.LoadAfter == "" || !slices.ContainsFunc(res.Runs, func(s string) bool { return strings.Contains(s, "./log/keys") }) {
		t.Errorf("figures %v, machine %q, runs %v", res.Figures, res.Machine, res.Runs)
	}
}

func TestScalingFromTheRun(t *testing.T) {
	res, err := parse(strings.NewReader(sample + "BenchmarkMirrorFederation-2  1  90000000000 ns/op  0.5 s-after-last-crawl  80.0 s/crawl  120000 entries-mirrored/node  294000000 bundle-bytes/node  20000 servers\n"))
	if err != nil {
		t.Fatal(err)
	}
	out := renderScaling(res)
	// 48 µs an entry, 2,450 bytes read an entry (294 MB / 120,000); 19 peers.
	for _, want := range []string{
		"48.0 µs/entry, 2,042 bytes/entry | 9.60 µs/entry (the same entries in synced raw Pebble batches) | 5.00× |",
		"every view complete 0.5 s after the last crawl's end; 120,000 entries and 294 MB of bundles read per node",
		"| a first crawl: 3 entries a server | 60,000 entries, 147 MB | 1,140,000 entries: 54.7 s of one core, 2.79 GB read, 2.40 GB on disk |",
		"| a day after: a continuity label a server, and 1.00% of servers changed (3 labels each) | 20,600 entries, 50.5 MB | 391,400 entries: 18.8 s of one core, 959 MB read |",
		"328,320 requests, ≤ 328 MB a day",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scaling lacks %q:\n%s", want, out)
		}
	}
	if out := renderScaling(&results{Figures: map[string]map[string]float64{}, Skipped: map[string]string{"Sync": "x"}}); !strings.Contains(out, "skipped: x") {
		t.Errorf("a run without Sync: %q", out)
	}
}

func TestDropFailures(t *testing.T) {
	kept := "bench-failed: ./node MirrorFederation: exit status 1\nbench-failed: ./node DeskPages: exit status 1\nBenchmarkSync-2 3 1 ns/op\n"
	got := string(dropFailures([]byte(kept), regexp.MustCompile("^MirrorFederation$")))
	two, _ := parse(strings.NewReader(sample + strings.Replace(sample, "12:00:00Z", "13:00:00Z", 1)))
	if d := two.describe(); !strings.Contains(d, "the runs that began 2026-12-03T12:00:00Z (42 s, load average 0.50 0.40 0.30 before, 1.50 1.00 0.50 after) and 2026-12-03T13:00:00Z") {
		t.Errorf("two sessions: %s", d)
	}
	if got != "bench-failed: ./node DeskPages: exit status 1\nBenchmarkSync-2 3 1 ns/op\n" {
		t.Errorf("got %q", got)
	}
}
