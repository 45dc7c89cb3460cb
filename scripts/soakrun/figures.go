package main

import (
	"fmt"
	"sort"
	"time"
)

// The thresholds memory and goroutines are judged against: the peak of the last crawl
// interval of the run over the peak of the first interval after the warm-up.
const (
	rssLimit  = 1.5
	heapLimit = 1.5
	gorLimit  = 1.2
)

// growth compares one node's process between its first measured interval after the
// warm-up and the last interval of the run.
type growth struct {
	Node             int
	Since            time.Duration // the compared process's start, since the soak's
	BaseFrom, BaseTo time.Duration
	LastFrom, LastTo time.Duration
	RSS, Heap, Gor   [2]float64 // peak of the base window, peak of the last
	// Where the RSS is, not judged: the pages of mapped files (the executable's), the Go
	// runtime's (what it mapped less what it gave back), the rest (outside the Go runtime:
	// Pebble's caches and memtables are C's when built with cgo), and of the rest every
	// store's Pebble block cache and unflushed writes, and its allocated memtable arenas.
	Files, GoRuntime, Outside, Pebble, Memtables [2]float64
	Judged                                       bool
	Reason                                       string // why it was not judged
}

func (g growth) ratio(v [2]float64) float64 {
	if v[0] == 0 {
		return 0
	}
	return v[1] / v[0]
}

// Flat says whether every ratio is within its threshold.
func (g growth) Flat() bool {
	return g.Judged && g.ratio(g.RSS) <= rssLimit && g.ratio(g.Heap) <= heapLimit && g.ratio(g.Gor) <= gorLimit
}

// growths compares every node's latest process.
func (s *soak) growths() []growth {
	samples := s.samplesCopy()
	var out []growth
	for _, p := range s.nodes {
		k := len(p.starts) - 1
		out = append(out, measureGrowth(samples, p.n, k, p.starts[k].Sub(s.start), s.o.effectiveWarmup(), s.o.interval, s.o.duration))
	}
	return out
}

// measureGrowth is the growth of node's k-th process, started at since, over the samples
// up to end.
func measureGrowth(samples []sample, node, k int, since, warmup, interval, end time.Duration) growth {
	g := growth{Node: node, Since: since, BaseFrom: since + warmup, BaseTo: since + warmup + interval,
		LastFrom: end - interval, LastTo: end}
	if g.BaseTo > g.LastFrom {
		g.Reason = fmt.Sprintf("the run ended %s after this process started; at least warm-up plus two intervals are needed", (end - since).Round(time.Second))
		return g
	}
	base, last := 0, 0
	for _, sm := range samples {
		if sm.Node != node || sm.Start != k || !sm.Up || sm.Paused || sm.Metrics == nil {
			continue
		}
		w := -1
		switch {
		case sm.At >= g.BaseFrom && sm.At <= g.BaseTo:
			w, base = 0, base+1
		case sm.At > g.LastFrom && sm.At <= g.LastTo:
			w, last = 1, last+1
		default:
			continue
		}
		g.RSS[w] = max(g.RSS[w], float64(sm.RSS))
		g.Heap[w] = max(g.Heap[w], sm.Metrics[mHeapInuse])
		g.Gor[w] = max(g.Gor[w], sm.Metrics[mGoroutines])
		goRuntime := sm.Metrics[mGoSys] - sm.Metrics[mHeapReleased]
		g.GoRuntime[w] = max(g.GoRuntime[w], goRuntime)
		g.Files[w] = max(g.Files[w], float64(sm.RSSFile))
		g.Outside[w] = max(g.Outside[w], float64(sm.RSS-sm.RSSFile)-goRuntime)
		g.Pebble[w] = max(g.Pebble[w], sm.Metrics[mPebble])
		g.Memtables[w] = max(g.Memtables[w], sm.Metrics[mMemtables])
	}
	if base == 0 || last == 0 {
		g.Reason = fmt.Sprintf("%d samples in the first window, %d in the last", base, last)
		return g
	}
	g.Judged = true
	return g
}

// crawlFigures is what the samples saw of one node's crawls.
type crawlFigures struct {
	Node             int
	Finished         int
	Median, Max      time.Duration
	Incomplete, Errs int
	Last             *runInfo
}

// crawls gathers every finished run the samples saw, per node.
func (s *soak) crawls() []crawlFigures {
	samples := s.samplesCopy()
	var out []crawlFigures
	for _, p := range s.nodes {
		runs := map[int]runInfo{}
		for _, sm := range samples {
			if sm.Node == p.n && sm.Run != nil && sm.Run.FinishedAt != nil {
				runs[sm.Run.ID] = *sm.Run
			}
		}
		out = append(out, summariseRuns(p.n, runs))
	}
	return out
}

func summariseRuns(node int, runs map[int]runInfo) crawlFigures {
	cf := crawlFigures{Node: node}
	var ds []time.Duration
	lastID := -1
	for id, r := range runs {
		if d, ok := r.duration(); ok {
			ds = append(ds, d)
		}
		if !r.Complete {
			cf.Incomplete++
		}
		if r.Error != nil {
			cf.Errs++
		}
		if id > lastID {
			lastID = id
			rr := r
			cf.Last = &rr
		}
	}
	cf.Finished = len(runs)
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	if len(ds) > 0 {
		cf.Median, cf.Max = ds[len(ds)/2], ds[len(ds)-1]
	}
	return cf
}

// row is one moment of the samples table: every node's sample at it.
type row struct {
	At    time.Duration
	Nodes []*sample
}

// rows groups the samples by moment, thinned to about want rows (the first and last kept).
func rows(samples []sample, nodes, want int) []row {
	var all []row
	for i := range samples {
		sm := &samples[i]
		if len(all) == 0 || all[len(all)-1].At != sm.At {
			all = append(all, row{At: sm.At, Nodes: make([]*sample, nodes)})
		}
		if sm.Node >= 1 && sm.Node <= nodes {
			all[len(all)-1].Nodes[sm.Node-1] = sm
		}
	}
	step := max(1, (len(all)+want-1)/want)
	var out []row
	for i, r := range all {
		if i%step == 0 || i == len(all)-1 {
			out = append(out, r)
		}
	}
	return out
}

// meanLoad is the mean of the load averages sampled.
func (s *soak) meanLoad() (mean, peak float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.loads {
		if l >= 0 {
			mean += l
			peak = max(peak, l)
			n++
		}
	}
	if n > 0 {
		mean /= float64(n)
	}
	return mean, peak
}

// failures lists the checks that failed: a crash, a log that does not pass its checks,
// nodes that disagree.
func (s *soak) failures() []string {
	var out []string
	if c := s.crashed(); c != "" {
		out = append(out, "crash: "+c)
	}
	for _, a := range s.audits {
		if a.Code == 1 || (a.Tiles && a.Code != 0) {
			out = append(out, fmt.Sprintf("node %d: histor audit at %s exited %d: %s", a.Node, fmtDur(a.At), a.Code, a.Out))
		}
	}
	out = append(out, s.finalFailures()...)
	out = append(out, s.agreementFailures()...)
	return out
}

func (s *soak) finalFailures() []string {
	var out []string
	for i, f := range s.final.nodes {
		n := i + 1
		if f.stop.killed || f.stop.err != nil {
			out = append(out, fmt.Sprintf("node %d: SIGTERM at the end: %s", n, f.stop))
		}
		if f.fsck.code != 0 {
			out = append(out, fmt.Sprintf("node %d: histor log fsck exited %d: %s", n, f.fsck.code, f.fsck.out))
		}
		if f.evidence > 0 {
			out = append(out, fmt.Sprintf("node %d serves %d equivocation bundles", n, f.evidence))
		}
		if f.logs.Panics > 0 {
			out = append(out, fmt.Sprintf("node %d's log holds %d panics", n, f.logs.Panics))
		}
		for _, m := range f.mirrors {
			if m.Forked {
				out = append(out, fmt.Sprintf("node %d's mirror of %s is forked", n, m.Observer))
			}
		}
	}
	return out
}

func (s *soak) agreementFailures() []string {
	a := s.agreement
	switch {
	case a.setupError != "":
		return []string{"agreement could not be checked: " + a.setupError}
	case !a.converged:
		return []string{fmt.Sprintf("the nodes' views of %d sampled servers did not agree within %s of the churn's end", len(a.sample), fmtDur(a.after))}
	}
	return nil
}
