package main

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// render writes the whole report. Every figure in it is computed here from what the run
// recorded.
func (s *soak) render(failures []string) string {
	var b strings.Builder
	s.renderHead(&b, failures)
	s.renderMachine(&b)
	s.renderParameters(&b)
	s.renderEvents(&b)
	s.renderSamples(&b)
	s.renderGrowth(&b)
	s.renderCrawls(&b)
	s.renderLogChecks(&b)
	s.renderAgreement(&b)
	s.renderNodeLogs(&b)
	return plainWords(b.String())
}

func (s *soak) renderHead(b *strings.Builder, failures []string) {
	fmt.Fprintf(b, "# Soak run\n\n")
	fmt.Fprintf(b, "Written by `scripts/soak` (not part of `scripts/test`); every figure below is computed by the run "+
		"from what it measured. Three `histor serve` processes federated over libp2p on loopback crawl a local "+
		"registry of %d MCP servers that keep changing, failing and coming back; node 2 is restarted at a third "+
		"of the run and node 3 is stopped (SIGSTOP) for %s at two thirds. Reproduce it with:\n\n", s.o.endpoints, fmtDur(s.o.pauseFor))
	fmt.Fprintf(b, "```sh\n%s\n```\n\n", s.o.command())
	if len(failures) == 0 {
		fmt.Fprintf(b, "**Result: every check passed** (no crash, every log passes fsck and the outside audit, the nodes' views are consistent).\n\n")
	} else {
		fmt.Fprintf(b, "**Result: %d checks failed.**\n\n", len(failures))
		for _, f := range failures {
			fmt.Fprintf(b, "- %s\n", f)
		}
		b.WriteString("\n")
	}
	for _, g := range s.growths() {
		if g.Judged && !g.Flat() {
			fmt.Fprintf(b, "Node %d's memory or goroutines grew past the thresholds (see Memory and goroutines).\n\n", g.Node)
		}
	}
}

func (s *soak) renderMachine(b *strings.Builder) {
	m := s.machine
	mean, peak := s.meanLoad()
	fmt.Fprintf(b, "## Machine\n\n| | |\n|---|---|\n")
	fmt.Fprintf(b, "| CPUs (nproc) | %d (%s) |\n", m.CPUs, m.CPUModel)
	fmt.Fprintf(b, "| memory | %.1f GiB |\n", float64(m.MemTotal)/(1<<30))
	fmt.Fprintf(b, "| system | %s |\n| Go | %s |\n| histor | %s |\n", m.Kernel, m.Go, m.Commit)
	fmt.Fprintf(b, "| load average (1 min) | %.2f before the start; %.2f mean, %.2f peak over the samples |\n\n", m.Load, mean, peak)
	b.WriteString("The fixture (registry and MCP servers) runs in the soak's own process on the same machine, " +
		"so the nodes share the CPUs with it and with whatever else the machine was doing.\n\n")
}

func (s *soak) renderParameters(b *strings.Builder) {
	perTick := fmt.Sprintf("%d tool-description changes, %d endpoints answering 500, %d hosts refusing connections",
		share(s.o.endpoints, changeShare), share(s.o.endpoints, failShare), max(1, share(s.o.endpoints, refuseShare)/s.churn.perHost))
	fmt.Fprintf(b, "## Parameters\n\n| | |\n|---|---|\n")
	fmt.Fprintf(b, "| run | %s under churn, then the churn ends and the nodes are compared |\n", fmtDur(s.o.duration))
	fmt.Fprintf(b, "| MCP servers | %d (stateless streamable HTTP, MCP Go SDK, 1 to 3 tools each) on %d loopback addresses |\n", s.o.endpoints, len(s.fleet.hosts))
	fmt.Fprintf(b, "| registry | local, paginated as the official one (`/v0.1/servers`, opaque cursors) |\n")
	fmt.Fprintf(b, "| churn | every %s: %s; a failure lasts %d ticks (seed %d) |\n", fmtDur(s.o.churnEvery), perTick, downTicks, s.o.seed)
	fmt.Fprintf(b, "| nodes | 3 `histor serve` (`--crawl-interval %s --curated=false --observe-own-face=true --allow-private-targets`), each with a members file naming the other two descriptors from `histor keygen --descriptor`, libp2p on loopback TCP and QUIC |\n", s.o.interval)
	fmt.Fprintf(b, "| samples | every %s: VmRSS, `/metrics` (`%s`, `%s`), `/log/checkpoint` size |\n", fmtDur(s.o.sampleEvery), mGoroutines, mHeapInuse)
	fmt.Fprintf(b, "| outside audits | `histor audit` of every running node every %s, and `--tiles` at the end |\n", fmtDur(s.o.auditEvery))
	fmt.Fprintf(b, "| growth thresholds | peak of the last %s over the peak of the first %s after a %s warm-up of the process: RSS ≤ %.1f, heap in use ≤ %.1f, goroutines ≤ %.1f |\n\n",
		fmtDur(s.o.interval), fmtDur(s.o.interval), fmtDur(s.o.effectiveWarmup()), rssLimit, heapLimit, gorLimit)
	c := s.churn.counts
	fmt.Fprintf(b, "Churn applied: %d ticks, %d changes, %d endpoint failures, %d host refusals, %d recoveries.\n\n",
		c.Ticks, c.Changes, c.Failures, c.Refusals, c.Recoveries)
	for _, e := range s.churn.errs {
		fmt.Fprintf(b, "- fixture: %s\n", e)
	}
}

func (s *soak) renderEvents(b *strings.Builder) {
	b.WriteString("## Timeline\n\n| time | node | what |\n|---|---|---|\n")
	s.mu.Lock()
	events := append([]event(nil), s.events...)
	s.mu.Unlock()
	for _, e := range events {
		node := "—"
		if e.Node > 0 {
			node = fmt.Sprint(e.Node)
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", fmtDur(e.At), node, cell(e.What))
	}
	b.WriteString("\n")
}

func (s *soak) renderSamples(b *strings.Builder) {
	samples := s.samplesCopy()
	rs := rows(samples, len(s.nodes), 20)
	fmt.Fprintf(b, "## Samples\n\n%d samples per node, every %s; %d rows shown. RSS and heap in MiB; log is the checkpoint's size; "+
		"`stopped` is a node under SIGSTOP (RSS only), `down` one not running.\n\n", len(samples)/len(s.nodes), fmtDur(s.o.sampleEvery), len(rs))
	b.WriteString("| time |")
	for _, p := range s.nodes {
		fmt.Fprintf(b, " n%d RSS | n%d gor. | n%d heap | n%d log |", p.n, p.n, p.n, p.n)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", 4*len(s.nodes)) + "\n")
	for _, r := range rs {
		fmt.Fprintf(b, "| %s |", fmtDur(r.At))
		for _, sm := range r.Nodes {
			b.WriteString(sampleCells(sm))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "\nSamples after %s were taken after the churn ended.\n\n", fmtDur(s.agreement.frozenAt))
}

func sampleCells(sm *sample) string {
	switch {
	case sm == nil || !sm.Up:
		return " down | | | |"
	case sm.Paused:
		return fmt.Sprintf(" %s | stopped | | |", mib(float64(sm.RSS)))
	case sm.Metrics == nil:
		return fmt.Sprintf(" %s | – | – | %s |", mib(float64(sm.RSS)), logCell(sm))
	}
	return fmt.Sprintf(" %s | %.0f | %s | %s |", mib(float64(sm.RSS)), sm.Metrics[mGoroutines], mib(sm.Metrics[mHeapInuse]), logCell(sm))
}

func logCell(sm *sample) string {
	if !sm.HasLog {
		return "–"
	}
	return fmt.Sprint(sm.LogSize)
}

func (s *soak) renderGrowth(b *strings.Builder) {
	b.WriteString("## Memory and goroutines\n\nPeak of the first crawl interval after the warm-up of each node's last process against the peak of the run's last interval.\n\n")
	b.WriteString("| node | process since | first window | last window | RSS MiB | ratio | heap MiB | ratio | goroutines | ratio | verdict |\n")
	b.WriteString("|---|---|---|---|---|---:|---|---:|---|---:|---|\n")
	for _, g := range s.growths() {
		if !g.Judged {
			fmt.Fprintf(b, "| %d | %s | | | | | | | | | not judged: %s |\n", g.Node, fmtDur(g.Since), g.Reason)
			continue
		}
		verdict := "flat"
		if !g.Flat() {
			verdict = "**grew**"
		}
		fmt.Fprintf(b, "| %d | %s | %s–%s | %s–%s | %s → %s | %.2f | %s → %s | %.2f | %.0f → %.0f | %.2f | %s |\n",
			g.Node, fmtDur(g.Since), fmtDur(g.BaseFrom), fmtDur(g.BaseTo), fmtDur(g.LastFrom), fmtDur(g.LastTo),
			mib(g.RSS[0]), mib(g.RSS[1]), g.ratio(g.RSS), mib(g.Heap[0]), mib(g.Heap[1]), g.ratio(g.Heap),
			g.Gor[0], g.Gor[1], g.ratio(g.Gor), verdict)
	}
	b.WriteString("\nWhere the RSS is, peak of each window (not judged): the pages of mapped files (`RssFile`, the executable's), the Go runtime's memory (`" +
		mGoSys + "` less `" + mHeapReleased + "`), the rest of the RSS, outside the Go runtime (Pebble allocates its block caches and memtables " +
		"with C's allocator when built with cgo), and of it every store's Pebble block cache and unflushed writes (`" + mPebble + "`, summed) " +
		"and every store's memtable arenas, the one taking writes with those flushed but still allocated (`" + mMemtables + "`, summed).\n\n")
	b.WriteString("| node | files MiB | Go runtime MiB | outside Go MiB | Pebble cache and unflushed MiB | Pebble memtables MiB |\n|---|---|---|---|---|---|\n")
	for _, g := range s.growths() {
		if g.Judged {
			fmt.Fprintf(b, "| %d | %s → %s | %s → %s | %s → %s | %s → %s | %s → %s |\n", g.Node, mib(g.Files[0]), mib(g.Files[1]),
				mib(g.GoRuntime[0]), mib(g.GoRuntime[1]), mib(g.Outside[0]), mib(g.Outside[1]), mib(g.Pebble[0]), mib(g.Pebble[1]),
				mib(g.Memtables[0]), mib(g.Memtables[1]))
		}
	}
	b.WriteString("\n")
}

func (s *soak) renderCrawls(b *strings.Builder) {
	b.WriteString("## Crawls\n\nRuns the samples saw finished (`/api/v1/stats` `lastRun`), and the last one's statuses.\n\n")
	b.WriteString("| node | runs seen | median | longest | incomplete | with error | last run: statuses | last run: labels |\n|---|---:|---:|---:|---:|---:|---|---|\n")
	for _, c := range s.crawls() {
		st, lb := "", ""
		if c.Last != nil {
			st, lb = counts(c.Last.Statuses), counts(c.Last.LabelsIssued)
		}
		fmt.Fprintf(b, "| %d | %d | %s | %s | %d | %d | %s | %s |\n", c.Node, c.Finished, fmtDur(c.Median), fmtDur(c.Max), c.Incomplete, c.Errs, st, lb)
	}
	b.WriteString("\n")
}

func (s *soak) renderLogChecks(b *strings.Builder) {
	b.WriteString("## Logs\n\nEach node's log checked from the outside while it ran (`histor audit`, the head it checked kept between runs, " +
		"so every audit also proves consistency with the previous one across the restart and the stop) and offline after SIGTERM (`histor log fsck`).\n\n")
	b.WriteString("| node | audits pass / run | last audit (`--tiles`) | SIGTERM at the end | fsck | cosignatures on the checkpoint | evidence bundles | mirrors (entries held) |\n|---|---|---|---|---|---:|---:|---|\n")
	for i, p := range s.nodes {
		pass, all, last := s.auditCounts(p.n)
		f := nodeFinal{}
		if i < len(s.final.nodes) {
			f = s.final.nodes[i]
		}
		fmt.Fprintf(b, "| %d | %d / %d | %s | %s | exit %d: %s | %d | %s | %s |\n", p.n, pass, all, cell(last), cell(f.stop.String()),
			f.fsck.code, cell(f.fsck.out), f.cosigs, evidenceCell(f), s.mirrorCell(f.mirrors))
	}
	b.WriteString("\n")
}

func evidenceCell(f nodeFinal) string {
	if f.evErr != "" {
		return "unread: " + cell(f.evErr)
	}
	return fmt.Sprint(f.evidence)
}

// auditCounts is how many of a node's audits passed, how many ran, and the final one.
func (s *soak) auditCounts(node int) (pass, all int, last string) {
	for _, a := range s.audits {
		if a.Node != node {
			continue
		}
		all++
		if a.Code == 0 {
			pass++
		}
		if a.Tiles {
			last = fmt.Sprintf("exit %d: %s", a.Code, a.Out)
		}
	}
	return pass, all, last
}

// mirrorCell names each mirrored observer by its node number with the entries held.
func (s *soak) mirrorCell(ms []mirrorStatus) string {
	var parts []string
	for _, m := range ms {
		name := m.Observer
		for _, p := range s.nodes {
			if p.did == m.Observer {
				name = fmt.Sprintf("node %d", p.n)
			}
		}
		part := fmt.Sprintf("%s: %d", name, m.Size)
		if m.Forked {
			part += " forked"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

func (s *soak) renderAgreement(b *strings.Builder) {
	a := s.agreement
	b.WriteString("## Agreement\n\n")
	if a.setupError != "" {
		fmt.Fprintf(b, "Not checked: %s\n\n", cell(a.setupError))
		return
	}
	fmt.Fprintf(b, "At %s the churn ended (every server up, nothing changing). Once every node had finished a crawl begun after it, "+
		"%d servers neither changed nor down in the last crawl interval before it, evenly spread, were read on every node: "+
		"`/api/v1/servers/<id>` must list the three observers, each with a digest, all the same, with agreement `unanimous`; "+
		"every node's view must give the same digest; `POST /api/v1/check` with the tools the server serves must answer `same`, `unanimous`; "+
		"and no node may list a server in a split view (`/api/v1/servers?state=split`).\n\n", fmtDur(a.frozenAt), len(a.sample))
	b.WriteString("| node | crawled after the end of the churn at | servers read | three observers, one digest | unanimous | /check same | split views |\n|---|---|---:|---:|---:|---:|---:|\n")
	for i, p := range s.nodes {
		n, crawled, split := nodeAgreement{}, "never", -1
		if i < len(a.nodes) {
			n, split = a.nodes[i], a.splits[i]
		}
		if i < len(a.crawled) && a.crawled[i] > 0 {
			crawled = fmtDur(a.crawled[i])
		}
		fmt.Fprintf(b, "| %d | %s | %d | %d | %d | %d | %d |\n", p.n, crawled, n.Checked, n.Observers, n.Unanimous, n.Same, split)
	}
	verdict := "consistent"
	if !a.converged {
		verdict = "**not consistent**"
	}
	fmt.Fprintf(b, "\nThe nodes' views agree on %d of %d servers: %s, %s after the churn ended (%d rounds).\n\n",
		a.crossNode, len(a.sample), verdict, fmtDur(a.after), a.rounds)
	for _, e := range a.examples {
		fmt.Fprintf(b, "- %s\n", cell(e))
	}
	if len(a.examples) > 0 {
		b.WriteString("\n")
	}
}

func (s *soak) renderNodeLogs(b *strings.Builder) {
	b.WriteString("## Node logs\n\nLines each node wrote (`--log-level info`), by level, and its most frequent warnings and errors.\n\n")
	b.WriteString("| node | lines | levels | panics | most frequent warnings and errors |\n|---|---:|---|---:|---|\n")
	for i, p := range s.nodes {
		if i >= len(s.final.nodes) {
			continue
		}
		ls := s.final.nodes[i].logs
		var top []string
		for _, m := range ls.Top {
			top = append(top, fmt.Sprintf("%d× %s %q", m.N, m.Level, m.Msg))
		}
		fmt.Fprintf(b, "| %d | %d | %s | %d | %s |\n", p.n, ls.Lines, counts(ls.Levels), ls.Panics, cell(strings.Join(top, "; ")))
	}
	b.WriteString("\n")
}

// counts renders a map of counts, largest first.
func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func mib(v float64) string { return fmt.Sprintf("%.0f", v/(1<<20)) }

func fmtDur(d time.Duration) string {
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// cell makes text safe inside a table cell: one line, no pipes, bounded.
func cell(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", "/")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// plainWords keeps the report to the project's words: nothing it renders calls a server
// safe, secure, audited, certified, approved, trusted or verified. Such a word can only
// come from text quoted from a node; it is replaced there with what the check did.
var barred = regexp.MustCompile(`(?i)\b(safe|secure|audited|certified|approved|trusted|verified)\b`)

func plainWords(s string) string {
	return barred.ReplaceAllStringFunc(s, func(w string) string {
		switch strings.ToLower(w) {
		case "verified", "audited", "certified", "approved":
			return "checked"
		case "trusted":
			return "pinned"
		default:
			return "[" + w[:1] + "…]"
		}
	})
}
