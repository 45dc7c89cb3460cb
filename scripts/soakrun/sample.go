package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sample is one node's figures at one moment.
type sample struct {
	At       time.Duration // since the soak started
	Node     int
	Start    int  // which start of the node's process (0 the first)
	Up       bool // its process was running
	Paused   bool // SIGSTOPped: only RSS is read
	RSS      uint64
	RSSFile  uint64             // of RSS, the pages of mapped files
	Metrics  map[string]float64 // nil when /metrics did not answer
	LogSize  uint64
	HasLog   bool
	Cosigs   int
	Crawling bool
	Run      *runInfo
	Mirrors  []mirrorStatus
	Err      string // the first read that failed
}

// Series read from /metrics at every sample.
const (
	mGoroutines   = "go_goroutines"
	mHeapInuse    = "go_memstats_heap_inuse_bytes"
	mOpenFDs      = "process_open_fds"
	mGoSys        = "go_memstats_sys_bytes"              // what the Go runtime mapped
	mHeapReleased = "go_memstats_heap_released_bytes"    // of it, given back to the system
	mPebble       = "histor_store_pebble_bytes"          // summed: every store's block cache and unflushed writes
	mMemtables    = "histor_store_pebble_memtable_bytes" // summed: every store's allocated memtable arenas
)

var sampledSeries = []string{mGoroutines, mHeapInuse, mOpenFDs, mGoSys, mHeapReleased, mPebble, mMemtables,
	"histor_mirror_refused_total", "histor_mirror_forks_total", "histor_witness_forks_total",
	"histor_federation_witnessed_size", "histor_mirror_entries_total"}

// sampleLoop samples every node each -sample until ctx ends.
func (s *soak) sampleLoop(ctx context.Context) {
	t := time.NewTicker(s.o.sampleEvery)
	defer t.Stop()
	s.takeSample(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.takeSample(ctx)
		}
	}
}

// takeSample reads every node at once and keeps the figures, with the machine's load.
func (s *soak) takeSample(ctx context.Context) {
	s.checkCrashes()
	at := s.since()
	out := make([]sample, len(s.nodes))
	var wg sync.WaitGroup
	for i, p := range s.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = sampleNode(ctx, p, at)
		}()
	}
	wg.Wait()
	s.mu.Lock()
	s.samples = append(s.samples, out...)
	s.loads = append(s.loads, loadAverage())
	s.mu.Unlock()
}

// sampleNode reads p's RSS from /proc and, unless it is stopped, its /metrics, checkpoint,
// stats and mirrors.
func sampleNode(ctx context.Context, p *nodeProc, at time.Duration) sample {
	p.mu.Lock()
	sm := sample{At: at, Node: p.n, Start: len(p.starts) - 1, Paused: p.paused}
	p.mu.Unlock()
	if p.hasExited() {
		return sm
	}
	sm.Up = true
	rss, file, err := rssBytes(p.pid())
	sm.RSS, sm.RSSFile = rss, file
	sm.note(err)
	if sm.Paused {
		return sm
	}
	const limit = 10 * time.Second
	if code, body, err := get(ctx, p.base()+"/metrics", limit); err == nil && code == 200 {
		sm.Metrics = metrics(body, sampledSeries...)
	} else {
		sm.note(orStatus(err, code, "/metrics"))
	}
	if code, body, err := get(ctx, p.base()+"/log/checkpoint", limit); err == nil && code == 200 {
		sm.LogSize, sm.Cosigs, err = checkpointSize(body)
		sm.HasLog = err == nil
		sm.note(err)
	} else {
		sm.note(orStatus(err, code, "/log/checkpoint"))
	}
	var st stats
	sm.note(getJSON(ctx, p.base()+"/api/v1/stats", limit, &st))
	sm.Crawling, sm.Run = st.Crawl.Running, st.LastRun
	var ms struct {
		Mirrors []mirrorStatus `json:"mirrors"`
	}
	sm.note(getJSON(ctx, p.base()+"/api/v1/mirrors", limit, &ms))
	sm.Mirrors = ms.Mirrors
	return sm
}

func (sm *sample) note(err error) {
	if err != nil && sm.Err == "" {
		sm.Err = err.Error()
	}
}

func orStatus(err error, code int, route string) error {
	if err != nil {
		return err
	}
	return statusError{route, code}
}

type statusError struct {
	route string
	code  int
}

func (e statusError) Error() string { return "GET " + e.route + ": " + strconv.Itoa(e.code) }

// loadAverage is the machine's 1-minute load average, -1 when unreadable.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// samplesCopy returns the samples so far.
func (s *soak) samplesCopy() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sample(nil), s.samples...)
}
