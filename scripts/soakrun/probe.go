package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second}}

// get reads url within limit: status and body (at most 64 MiB).
func get(ctx context.Context, url string, limit time.Duration) (int, []byte, error) {
	return do(ctx, http.MethodGet, url, nil, limit)
}

func do(ctx context.Context, method, url string, body []byte, limit time.Duration) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("making the request %s %s: %w", method, url, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("reading %s %s: %w", method, url, err)
	}
	return resp.StatusCode, b, nil
}

// getJSON reads url into v; anything but 200 is an error.
func getJSON(ctx context.Context, url string, limit time.Duration, v any) error {
	code, b, err := get(ctx, url, limit)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %.200s", url, code, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decoding GET %s: %w", url, err)
	}
	return nil
}

// metrics reads the named series without labels (or the sum over their labels) from a
// Prometheus text exposition.
func metrics(body []byte, names ...string) map[string]float64 {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, value := seriesValue(line)
		if !want[name] {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] += v
		}
	}
	return out
}

// seriesValue splits one sample line into its metric name and value.
func seriesValue(line string) (name, value string) {
	rest := line
	if i := strings.IndexByte(line, '{'); i >= 0 {
		name, rest = line[:i], line[strings.LastIndexByte(line, '}')+1:]
	} else {
		name, rest, _ = strings.Cut(line, " ")
	}
	if f := strings.Fields(rest); len(f) > 0 {
		value = f[0]
	}
	return name, value
}

// checkpointSize reads the tree size (second line) and the number of cosignatures (the
// signature lines beyond the log's own) of a C2SP checkpoint.
func checkpointSize(body []byte) (size uint64, cosigs int, err error) {
	lines := strings.Split(string(body), "\n")
	if len(lines) < 3 {
		return 0, 0, fmt.Errorf("a checkpoint of %d lines", len(lines))
	}
	size, err = strconv.ParseUint(lines[1], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("checkpoint size %q: %w", lines[1], err)
	}
	sigs := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "\u2014 ") {
			sigs++
		}
	}
	return size, max(0, sigs-1), nil
}

// rssBytes reads VmRSS of pid from /proc, and of it RssFile: the pages of mapped files
// (the executable's own among them).
func rssBytes(pid int) (rss, file uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading the status of process %d: %w", pid, err)
	}
	found := 0
	for _, l := range strings.Split(string(b), "\n") {
		for field, into := range map[string]*uint64{"VmRSS:": &rss, "RssFile:": &file} {
			v, ok := strings.CutPrefix(l, field)
			if !ok {
				continue
			}
			f := strings.Fields(v) // "123456 kB"
			kb, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("parsing %s %q: %w", field, v, err)
			}
			*into, found = kb<<10, found+1
		}
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("process %d: no VmRSS or RssFile", pid)
	}
	return rss, file, nil
}

// stats is what the soak reads of /api/v1/stats.
type stats struct {
	Crawl struct {
		Running  bool `json:"running"`
		Progress *struct {
			Done int `json:"done"`
			Of   int `json:"of"`
		} `json:"progress"`
	} `json:"crawl"`
	LastRun *runInfo `json:"lastRun"`
}

// runInfo is one crawl run as /api/v1/stats's lastRun shows it.
type runInfo struct {
	ID           int            `json:"id"`
	StartedAt    string         `json:"startedAt"`
	FinishedAt   *string        `json:"finishedAt"`
	Attempted    int            `json:"attempted"`
	Statuses     map[string]int `json:"statuses"`
	LabelsIssued map[string]int `json:"labelsIssued"`
	Changes      int            `json:"changes"`
	Error        *string        `json:"error"`
	Complete     bool           `json:"complete"`
}

const apiTime = "2006-01-02T15:04:05Z"

// duration is how long the run took, when it finished.
func (r runInfo) duration() (time.Duration, bool) {
	if r.FinishedAt == nil {
		return 0, false
	}
	s, err1 := time.Parse(apiTime, r.StartedAt)
	f, err2 := time.Parse(apiTime, *r.FinishedAt)
	return f.Sub(s), err1 == nil && err2 == nil
}

// mirrorStatus is one entry of /api/v1/mirrors.
type mirrorStatus struct {
	Observer   string `json:"observer"`
	Size       uint64 `json:"size"`
	Checkpoint uint64 `json:"checkpoint"`
	Target     uint64 `json:"target"`
	Forked     bool   `json:"forked"`
	LastError  string `json:"lastError"`
}
