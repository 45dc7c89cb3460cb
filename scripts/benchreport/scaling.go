package main

import (
	"fmt"
	"strings"
)

// The paper federation of docs/SCALING.md: what mirroring costs one node, from the per-entry
// figures of the same run. These are the model's inputs, not measurements.
const (
	paperObservers       = 20
	paperServers         = 20_000
	paperFirstEntries    = 3    // a first crawl: an observation label with its descriptor and two labels a server
	paperDailyContinuity = 1    // a continuity label a server every ≥ 20 h
	paperChangedFraction = 0.01 // servers changed in a day
	paperLabelsPerChange = 3
	paperPollSeconds     = 5    // --mirror-poll
	paperCheckpointBytes = 1000 // one checkpoint answer, at most
	paperStoredHashBytes = 64   // the stored hashes kept beside an entry
	scalingBegin         = "<!-- scaling:begin -->"
	scalingEnd           = "<!-- scaling:end -->"
)

// renderScaling writes SCALING.md's block, or says which figure the run lacks.
func renderScaling(res *results) string {
	perEntry, ok1 := res.Figures["Sync"]["ns/entry"]
	size, ok2 := res.Figures["Sync"]["bytes/entry"]
	if !ok1 || !ok2 {
		return "\nThis run did not measure `BenchmarkSync` (" + res.missing("Sync", "ns/entry") + "); run `scripts/bench -only Sync` to fill this block.\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nWritten by `scripts/bench` from %s.\n\n", res.describe())
	b.WriteString("| measured | figure | baseline (same run) | ratio |\n|---|---|---|---|\n")
	base := "—"
	ratio := "—"
	if bp, ok := res.Figures["SyncBaselinePebble"]["ns/entry"]; ok && bp > 0 {
		base, ratio = human(bp, "ns/entry")+" (the same entries in synced raw Pebble batches)", ratioText(perEntry/bp)
	}
	fmt.Fprintf(&b, "| one entry mirrored: fetched from a source in memory, checked against the checkpoint, stored in Pebble, indexed (`BenchmarkSync`) | %s, %s | %s | %s |\n",
		human(perEntry, "ns/entry"), human(size, "bytes/entry"), base, ratio)
	read := size
	readFrom := "`BenchmarkSync`'s entry size (this run did not measure `BenchmarkMirrorFederation`)"
	mf := res.Figures["MirrorFederation"]
	if mf["entries-mirrored/node"] > 0 {
		read = mf["bundle-bytes/node"] / mf["entries-mirrored/node"]
		readFrom = "the bundle bytes `BenchmarkMirrorFederation` read per entry mirrored, partial bundles read again included"
		fmt.Fprintf(&b, "| 3 nodes over %s servers on loopback, each crawling in turn (`BenchmarkMirrorFederation`) | every view complete %s after the last crawl's end; %s entries and %s of bundles read per node; %s a crawl | — | — |\n",
			thousands(int64(mf["servers"])), human(mf["s-after-last-crawl"], "s"), thousands(int64(mf["entries-mirrored/node"])), bytesText(mf["bundle-bytes/node"]), human(mf["s/crawl"], "s"))
	} else {
		fmt.Fprintf(&b, "| `BenchmarkMirrorFederation` | %s | | |\n", res.missing("MirrorFederation", "s-after-last-crawl"))
	}
	peers := float64(paperObservers - 1)
	first := float64(paperServers * paperFirstEntries)
	daily := float64(paperServers)*paperDailyContinuity + float64(paperServers)*paperChangedFraction*paperLabelsPerChange
	polls := peers * 86400 / paperPollSeconds
	fmt.Fprintf(&b, "\n%d observers × %s servers on paper, from %s an entry on one core and %s read an entry (%s):\n\n",
		paperObservers, thousands(paperServers), strings.TrimSuffix(human(perEntry, "ns/entry"), "/entry"), bytesText(read), readFrom)
	b.WriteString("| | per observer's log | per node (mirrors the other logs) |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| a first crawl: %d entries a server | %s entries, %s | %s entries: %s of one core, %s read, %s on disk |\n",
		paperFirstEntries, thousands(int64(first)), bytesText(first*read), thousands(int64(first*peers)),
		human(first*peers*perEntry/1e9, "s"), bytesText(first*peers*read), bytesText(first*peers*(size+paperStoredHashBytes)))
	fmt.Fprintf(&b, "| a day after: a continuity label a server, and %s%% of servers changed (%d labels each) | %s entries, %s | %s entries: %s of one core, %s read |\n",
		num(paperChangedFraction*100), paperLabelsPerChange, thousands(int64(daily)), bytesText(daily*read), thousands(int64(daily*peers)),
		human(daily*peers*perEntry/1e9, "s"), bytesText(daily*peers*read))
	fmt.Fprintf(&b, "| polling | one checkpoint request (≤ %s) every %d s | %s requests, ≤ %s a day; a sync that finds the same size reads nothing else |\n",
		bytesText(paperCheckpointBytes), paperPollSeconds, thousands(int64(polls)), bytesText(polls*paperCheckpointBytes))
	return b.String()
}

// bytesText prints a byte count in decimal units.
func bytesText(v float64) string {
	switch {
	case v >= 1e9:
		return num(v/1e9) + " GB"
	case v >= 1e6:
		return num(v/1e6) + " MB"
	case v >= 1e3:
		return num(v/1e3) + " kB"
	}
	return num(v) + " bytes"
}
