// Command soakrun is scripts/soak: three `histor serve` processes federated over libp2p on
// loopback, crawling a local registry of MCP servers that keep changing, failing and coming
// back, for a long while; one node is restarted and one is stopped for a minute on the way.
// It samples every node's memory, goroutines and log size, checks every log from the
// outside while it runs and offline after it stops, compares what the nodes say of a
// sample of servers, and writes the report (docs/SOAK.md by default). It exits 1 when a
// node crashed, a log does not pass its checks or the nodes disagree, 2 when the run could
// not be made.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"
)

// options are the soak's flags.
type options struct {
	duration    time.Duration
	endpoints   int
	interval    time.Duration
	out         string
	bin         string
	sampleEvery time.Duration
	churnEvery  time.Duration
	auditEvery  time.Duration
	warmup      time.Duration
	pauseFor    time.Duration
	agreeSample int
	seed        uint64
	keep        bool
	args        []string // the flags given, as the reproducing command shows them
}

func parseFlags() options {
	var o options
	flag.DurationVar(&o.duration, "duration", 30*time.Minute, "how long the nodes run under churn")
	flag.IntVar(&o.endpoints, "endpoints", 2000, "MCP servers the registry fixture lists")
	flag.DurationVar(&o.interval, "interval", time.Minute, "every node's --crawl-interval")
	flag.StringVar(&o.out, "out", "docs/SOAK.md", "write the report to this file")
	flag.StringVar(&o.bin, "histor", ".cache/histor", "the histor binary to run")
	flag.DurationVar(&o.sampleEvery, "sample", 30*time.Second, "sample every node this often")
	flag.DurationVar(&o.churnEvery, "churn", time.Minute, "change, fail and bring back servers this often")
	flag.DurationVar(&o.auditEvery, "audit", 5*time.Minute, "audit every running node from the outside this often")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Minute, "memory is compared from this long after a process starts (at most a quarter of -duration)")
	flag.DurationVar(&o.pauseFor, "pause", time.Minute, "how long node 3 stays SIGSTOPped")
	flag.IntVar(&o.agreeSample, "agree-sample", 50, "servers whose views are compared across the nodes")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the churn's random choices")
	flag.BoolVar(&o.keep, "keep", false, "keep the nodes' data directories after the run")
	flag.Parse()
	flag.Visit(func(f *flag.Flag) {
		if f.Name != "out" && f.Name != "histor" && f.Name != "keep" {
			o.args = append(o.args, "-"+f.Name+" "+f.Value.String())
		}
	})
	sort.Strings(o.args)
	return o
}

// validate refuses settings the soak cannot run with.
func (o options) validate() error {
	switch {
	case o.duration < 2*time.Minute:
		return fmt.Errorf("-duration %s: at least 2m", o.duration)
	case o.endpoints < 10:
		return fmt.Errorf("-endpoints %d: at least 10", o.endpoints)
	case o.interval <= 0 || o.sampleEvery <= 0 || o.churnEvery <= 0 || o.auditEvery <= 0 || o.pauseFor <= 0:
		return fmt.Errorf("-interval, -sample, -churn, -audit and -pause must be positive")
	case 3*o.pauseFor > o.duration:
		return fmt.Errorf("-pause %s: node 3 must be back before the run ends, so at most a third of -duration", o.pauseFor)
	case o.agreeSample < 1:
		return fmt.Errorf("-agree-sample %d: at least 1", o.agreeSample)
	}
	return nil
}

// effectiveWarmup is the warm-up the figures use: -warmup, at most a quarter of the run.
func (o options) effectiveWarmup() time.Duration { return min(o.warmup, o.duration/4) }

// command is the command line that reproduces the run.
func (o options) command() string {
	return strings.TrimSpace("scripts/soak " + strings.Join(o.args, " "))
}

func main() {
	o := parseFlags()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	failures, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	if len(failures) > 0 {
		for _, f := range failures {
			fmt.Fprintln(os.Stderr, "soak: FAIL:", f)
		}
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "soak: every check passed; report in", o.out)
}
