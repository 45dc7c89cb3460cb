package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// soak is one run: the fixture, the nodes and everything recorded about them.
type soak struct {
	o      options
	dir    string
	fleet  *fleet
	reg    *registry
	churn  *churner
	nodes  []*nodeProc
	start  time.Time
	frozen time.Time // when the churn ended

	mu      sync.Mutex
	samples []sample  // guarded by mu
	loads   []float64 // 1-minute load averages at each sample; guarded by mu
	events  []event   // guarded by mu
	crash   string    // the first crash seen; guarded by mu

	audits    []auditResult
	final     finalChecks
	agreement agreementResult
	machine   machine
}

// event is one thing the soak did or saw, for the report's timeline.
type event struct {
	At   time.Duration
	Node int // 0: the fixture or the whole run
	What string
}

func (s *soak) since() time.Duration { return time.Since(s.start) }

func (s *soak) record(node int, format string, args ...any) {
	what := fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.events = append(s.events, event{At: s.since(), Node: node, What: what})
	s.mu.Unlock()
	prefix := "soak"
	if node > 0 {
		prefix = fmt.Sprintf("soak: node %d", node)
	}
	fmt.Fprintf(os.Stderr, "%s %s: %s\n", s.since().Round(time.Second), prefix, what)
}

// run makes the whole soak and writes its report; it returns the checks that failed, or
// an error when the run could not be made.
func run(ctx context.Context, o options) ([]string, error) {
	s := &soak{o: o, machine: readMachine()}
	dir, err := os.MkdirTemp("", "histor-soak-")
	if err != nil {
		return nil, fmt.Errorf("making the soak's directory: %w", err)
	}
	s.dir = dir
	defer s.cleanup()
	if err := s.setUp(ctx); err != nil {
		s.stopAll()
		return nil, err
	}
	s.soakPhase(ctx)
	if ctx.Err() != nil {
		s.stopAll()
		return nil, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	s.settle(ctx)
	s.finish(ctx)
	failures := s.failures()
	if err := s.writeReport(failures); err != nil {
		return failures, err
	}
	return failures, nil
}

// cleanup removes the soak's directory, unless -keep or a check failed.
func (s *soak) cleanup() {
	if s.fleet != nil {
		s.fleet.close()
	}
	if s.reg != nil {
		s.reg.close()
	}
	if s.o.keep || len(s.failures()) > 0 {
		fmt.Fprintln(os.Stderr, "soak: the nodes' data and logs are kept in", s.dir)
		return
	}
	os.RemoveAll(s.dir)
}

// setUp starts the fixture, makes the nodes' identities and starts the nodes.
func (s *soak) setUp(ctx context.Context) error {
	var err error
	if s.fleet, err = startFleet(s.o.endpoints); err != nil {
		return err
	}
	if s.reg, err = startRegistry(s.fleet); err != nil {
		return err
	}
	s.churn = newChurner(s.fleet, s.o.seed)
	if s.nodes, err = planNodes(s.dir, 3); err != nil {
		return err
	}
	for _, p := range s.nodes {
		if err := keygen(ctx, s.o.bin, p); err != nil {
			return err
		}
	}
	if err := writeMembers(s.nodes); err != nil {
		return err
	}
	s.start = time.Now()
	for _, p := range s.nodes {
		if err := p.start(ctx, s.o, s.reg.url); err != nil {
			return fmt.Errorf("%w\n%s", err, tail(p.logPath, 20))
		}
		s.record(p.n, "started (pid %d)", p.pid())
	}
	return nil
}

// stopAll stops every node still running, for an aborted run.
func (s *soak) stopAll() {
	for _, p := range s.nodes {
		if p.cmd != nil && !p.hasExited() {
			p.stop(time.Minute)
		}
	}
}

// soakPhase runs the churn, the samples, the audits and the node churn for -duration, or
// until a node crashes.
func (s *soak) soakPhase(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.sampleLoop(ctx)
	churnT := time.NewTicker(s.o.churnEvery)
	defer churnT.Stop()
	auditT := time.NewTicker(s.o.auditEvery)
	defer auditT.Stop()
	plan := s.nodeChurnPlan()
	end := time.NewTimer(time.Until(s.start.Add(s.o.duration)))
	defer end.Stop()
	for {
		next := time.NewTimer(time.Hour)
		if len(plan) > 0 {
			next.Reset(time.Until(s.start.Add(plan[0].at)))
		}
		select {
		case <-ctx.Done():
		case <-end.C:
		case now := <-churnT.C:
			s.churn.step(now)
		case <-auditT.C:
			s.auditAll(ctx, false)
		case <-next.C:
			plan[0].do(ctx)
			plan = plan[1:]
		}
		next.Stop()
		if ctx.Err() != nil || s.since() >= s.o.duration || s.crashed() != "" {
			s.resumeAll()
			return
		}
	}
}

// action is one step of the node churn, at a time since the start.
type action struct {
	at time.Duration
	do func(context.Context)
}

// nodeChurnPlan restarts node 2 at a third of the run and stops node 3 for -pause at two
// thirds.
func (s *soak) nodeChurnPlan() []action {
	third := s.o.duration / 3
	return []action{
		{third, func(ctx context.Context) { s.restart(ctx, s.nodes[1]) }},
		{2 * third, func(context.Context) { s.pause(s.nodes[2]) }},
		{2*third + s.o.pauseFor, func(context.Context) { s.resume(s.nodes[2]) }},
	}
}

// restart stops p with SIGTERM, waits for it and starts it again on the same data.
func (s *soak) restart(ctx context.Context, p *nodeProc) {
	r := p.stop(time.Minute)
	s.record(p.n, "SIGTERM for a restart: %s", r)
	if !r.clean() {
		s.setCrash(fmt.Sprintf("node %d did not stop cleanly for its restart: %s", p.n, r))
	}
	if err := p.start(ctx, s.o, s.reg.url); err != nil {
		s.setCrash(fmt.Sprintf("node %d did not start again: %v", p.n, err))
		return
	}
	s.record(p.n, "started again on the same data (pid %d)", p.pid())
}

func (s *soak) pause(p *nodeProc) {
	if err := p.pause(); err != nil {
		s.record(p.n, "%v", err)
		return
	}
	s.record(p.n, "SIGSTOP")
}

func (s *soak) resume(p *nodeProc) {
	if err := p.resume(); err != nil {
		s.record(p.n, "%v", err)
		return
	}
	s.record(p.n, "SIGCONT")
}

// resumeAll sends SIGCONT to any node still stopped when the soak phase ends early.
func (s *soak) resumeAll() {
	for _, p := range s.nodes {
		if p.isPaused() {
			s.resume(p)
		}
	}
}

func (s *soak) setCrash(what string) {
	s.mu.Lock()
	first := s.crash == ""
	if first {
		s.crash = what
	}
	s.mu.Unlock()
	if first {
		s.record(0, "%s", what)
	}
}

func (s *soak) crashed() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.crash
}

// checkCrashes notes any node that ended without being asked to.
func (s *soak) checkCrashes() {
	for _, p := range s.nodes {
		if p.crashed() {
			s.setCrash(fmt.Sprintf("node %d exited by itself (%v)", p.n, p.exitErr()))
		}
	}
}

// finish audits every node with its tiles, reads what the federation holds, stops the
// nodes and checks each log offline.
func (s *soak) finish(ctx context.Context) {
	s.auditAll(ctx, true)
	s.final.nodes = make([]nodeFinal, len(s.nodes))
	for i, p := range s.nodes {
		s.final.nodes[i] = s.readFinal(ctx, p)
	}
	s.takeSample(ctx) // the last figures before the stop
	for i, p := range s.nodes {
		if p.hasExited() {
			continue
		}
		r := p.stop(time.Minute)
		s.final.nodes[i].stop = r
		s.record(p.n, "SIGTERM at the end: %s", r)
	}
	for i, p := range s.nodes {
		s.final.nodes[i].fsck = fsck(ctx, s.o.bin, p)
		s.record(p.n, "histor log fsck: exit %d", s.final.nodes[i].fsck.code)
	}
	for i, p := range s.nodes {
		s.final.nodes[i].logs = scanNodeLog(p.logPath)
	}
}

// writeReport renders the report to -out.
func (s *soak) writeReport(failures []string) error {
	if err := os.MkdirAll(filepath.Dir(s.o.out), 0o755); err != nil {
		return fmt.Errorf("making the report's directory: %w", err)
	}
	if err := os.WriteFile(s.o.out, []byte(s.render(failures)), 0o644); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}

var errNotYet = errors.New("not yet")
