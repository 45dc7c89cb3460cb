package gvisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// oomPoll is how often a run reads its memory cgroup's OOM-kill counter.
const oomPoll = 100 * time.Millisecond

// waitDelay bounds how long Wait waits for the stdio copies once runsc has
// exited.
const waitDelay = 5 * time.Second

// End says how a run ended.
type End string

// The ends of a run. A sandbox killed by the host OOM killer ends with
// EndMemory even when runsc reports a plain SIGKILL (exit 137).
const (
	EndExited   End = "exited"       // the process exited by itself
	EndSignal   End = "signal"       // the process died of a signal
	EndMemory   End = "memory limit" // the memory cgroup ran out and the OOM killer struck
	EndDeadline End = "deadline"     // the context's deadline passed; killed
	EndCanceled End = "canceled"     // the context was canceled; killed
	EndKilled   End = "killed"       // Kill was called
)

// Exit is how a run ended.
type Exit struct {
	End     End
	Code    int            // runsc's exit status: the process's, or 128+signal
	Signal  syscall.Signal // the signal for EndSignal (and for killed runs, usually SIGKILL)
	Err     error          // what waiting for runsc reported beyond an exit status
	Seconds float64        // from Start to the end of cleanup
}

func (e Exit) String() string {
	switch e.End {
	case EndExited:
		return fmt.Sprintf("exited with status %d", e.Code)
	case EndSignal:
		return "died of " + e.Signal.String()
	}
	return string(e.End)
}

// Sandbox is one started run. Wait must be called; the pipes may be read
// before, during or after it and give EOF once the sandbox is gone.
type Sandbox struct {
	// ID is the container ID.
	ID string
	// Stdin, Stdout and Stderr are set when the Run left the stream nil.
	// The caller closes them.
	Stdin          io.WriteCloser
	Stdout, Stderr io.ReadCloser

	rt      *Runtime
	cmd     *exec.Cmd
	bundle  string
	started time.Time
	exited  chan struct{} // closed when runsc has exited

	mu     sync.Mutex
	reason End // why we killed it; guarded by mu, set once

	// Set by reap before exited is closed.
	waitErr error
	oom     bool
	// The caller's ends of the pipes Run left nil.
	ownStdin, ownStdout, ownStderr *os.File

	stopOnce sync.Once
	waitOnce sync.Once
	exit     Exit
}

// Start writes r's bundle and starts it. The sandbox is killed when ctx
// ends; Wait then reports EndDeadline or EndCanceled.
func (rt *Runtime) Start(ctx context.Context, r Run) (*Sandbox, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("starting sandbox %s: %w", r.ID, err)
	}
	bundle := filepath.Join(rt.state, "bundles", r.ID)
	if err := os.MkdirAll(bundle, 0o700); err != nil {
		return nil, fmt.Errorf("creating bundle directory: %w", err)
	}
	s := &Sandbox{ID: r.ID, rt: rt, bundle: bundle, exited: make(chan struct{})}
	if err := s.start(&r); err != nil {
		os.RemoveAll(bundle)
		return nil, fmt.Errorf("starting sandbox %s: %w", r.ID, err)
	}
	rt.log.Info("sandbox started", "id", r.ID, "network", r.NetNS != "", "traced", r.Trace != nil)
	go s.watch(ctx)
	return s, nil
}

func (s *Sandbox) start(r *Run) error {
	if err := r.writeBundle(s.bundle); err != nil {
		return err
	}
	if r.Trace != nil {
		if err := os.MkdirAll(r.Trace.Dir, 0o700); err != nil {
			return fmt.Errorf("creating trace directory: %w", err)
		}
	}
	cmd, err := s.rt.command(r, s.bundle)
	if err != nil {
		return err
	}
	s.cmd = cmd
	cmd.WaitDelay = waitDelay
	child, err := s.stdio(r)
	defer closeAll(child) // runsc holds its own copies once started
	if err != nil {
		closeAll([]*os.File{s.ownStdin, s.ownStdout, s.ownStderr})
		return err
	}
	s.started = time.Now()
	if err := cmd.Start(); err != nil {
		closeAll([]*os.File{s.ownStdin, s.ownStdout, s.ownStderr})
		return fmt.Errorf("running runsc: %w", err)
	}
	go s.reap()
	return nil
}

// reap waits for runsc. The pipes handed to the caller are our own, so
// exec.Cmd.Wait never closes them under a reader: the reader sees EOF once
// every holder of the other end (runsc, its gofer and sandbox) is gone.
func (s *Sandbox) reap() {
	s.waitErr = s.cmd.Wait()
	s.oom = s.rt.oomKills(s.ID) > 0 // before cleanup removes the cgroup
	close(s.exited)
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// command is `runsc ... run --bundle DIR ID`, started from the network
// namespace through the netstack workaround when r has one.
func (rt *Runtime) command(r *Run, bundle string) (*exec.Cmd, error) {
	args := []string{"--root", rt.state, "--platform", rt.platform}
	if r.NetNS == "" {
		args = append(args, "--network=none")
	} else {
		args = append(args, "--network=sandbox")
	}
	if r.Trace != nil {
		args = append(args, r.Trace.flags()...)
	}
	args = append(args, "run", "--bundle", bundle, r.ID)
	if r.NetNS == "" {
		return exec.Command(rt.runsc, args...), nil
	}
	return netnsCommand(r.NetNS, rt.runsc, args)
}

// netnsCommand runs runsc inside netns from a private mount namespace with
// a tiny tmpfs over /proc/sys/net/core. runsc 0.0~20240729 decides it is in
// the root network namespace when /proc/sys/net/core/rmem_default exists,
// which newer kernels show in every namespace (google/gvisor#10704, fixed
// in release-20240807). `ip netns exec` is no substitute: it remounts /sys
// and hides /sys/fs/cgroup from runsc.
func netnsCommand(netns, runsc string, args []string) (*exec.Cmd, error) {
	tools := map[string]string{"nsenter": "", "unshare": "", "sh": ""}
	for t := range tools {
		p, err := exec.LookPath(t)
		if err != nil {
			return nil, fmt.Errorf("finding %s for a networked sandbox: %w", t, err)
		}
		tools[t] = p
	}
	script := `mount -t tmpfs -o size=1k none /proc/sys/net/core && exec "$@"`
	argv := append([]string{"--net=" + netns, tools["unshare"], "-m", "--propagation", "private",
		tools["sh"], "-c", script, "runsc", runsc}, args...)
	return exec.Command(tools["nsenter"], argv...), nil
}

// Wrapping hides an *os.File from exec.Cmd, so it always makes a pipe.
type readerOnly struct{ io.Reader }
type writerOnly struct{ io.Writer }

// stdio connects the three streams through pipes and returns the ends that
// go to runsc, for closing after Start.
func (s *Sandbox) stdio(r *Run) ([]*os.File, error) {
	var child []*os.File
	pipe := func() (rd, wr *os.File, err error) {
		rd, wr, err = os.Pipe()
		if err != nil {
			return nil, nil, fmt.Errorf("making stdio pipe: %w", err)
		}
		return rd, wr, nil
	}
	c := s.cmd
	if r.Stdin != nil {
		c.Stdin = readerOnly{r.Stdin}
	} else {
		rd, wr, err := pipe()
		if err != nil {
			return child, err
		}
		c.Stdin, s.Stdin, s.ownStdin, child = rd, wr, wr, append(child, rd)
	}
	if r.Stdout != nil {
		c.Stdout = writerOnly{r.Stdout}
	} else {
		rd, wr, err := pipe()
		if err != nil {
			return child, err
		}
		c.Stdout, s.Stdout, s.ownStdout, child = wr, rd, rd, append(child, wr)
	}
	if r.Stderr != nil {
		c.Stderr = writerOnly{r.Stderr}
	} else {
		rd, wr, err := pipe()
		if err != nil {
			return child, err
		}
		c.Stderr, s.Stderr, s.ownStderr, child = wr, rd, rd, append(child, wr)
	}
	return child, nil
}

// watch kills the sandbox when ctx ends or the OOM killer strikes in its
// memory cgroup (after which the sandbox may hang instead of exiting).
func (s *Sandbox) watch(ctx context.Context) {
	t := time.NewTicker(oomPoll)
	defer t.Stop()
	for {
		select {
		case <-s.exited:
			return
		case <-ctx.Done():
			end := EndCanceled
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				end = EndDeadline
			}
			s.stop(end)
			return
		case <-t.C:
			if s.rt.oomKills(s.ID) > 0 {
				s.stop(EndMemory)
				return
			}
		}
	}
}

// Kill stops the sandbox (runsc kill KILL, runsc delete -force, again
// until runsc has exited) and removes its cgroups. It is idempotent; Wait
// still has to be called.
func (s *Sandbox) Kill() { s.stop(EndKilled) }

func (s *Sandbox) stop(why End) {
	s.mu.Lock()
	if s.reason == "" {
		s.reason = why
	}
	s.mu.Unlock()
	s.stopOnce.Do(s.kill)
}

// The number of kill rounds, and the wait for runsc after each, before the
// runsc process itself is killed.
const (
	killRounds = 5
	killWait   = time.Second
)

// kill destroys the container until runsc exits: a kill that races runsc's
// own setup finds nothing to kill yet, so it is repeated. Each round first
// sends KILL and gives runsc a moment to end by itself; only then does it
// force a delete, which on a container still stopping waits for runsc's
// own 5 s deadline (measured: every observation paid it when the delete
// came straight after the kill). cleanup deletes what an ended run left.
func (s *Sandbox) kill() {
	exited := func(within time.Duration) bool {
		select {
		case <-s.exited:
			return true
		case <-time.After(within):
			return false
		}
	}
	for range killRounds {
		s.rt.signal(s.ID)
		if exited(killWait) {
			return
		}
		s.rt.delete(s.ID)
		if exited(killWait) {
			return
		}
	}
	s.rt.log.Warn("runsc outlived kill and delete; killing it", "id", s.ID)
	s.cmd.Process.Kill()
	<-s.exited
}

// cleanup runs once runsc has exited, when nothing more can appear: a Kill
// that raced runsc's own setup may have found nothing to kill yet.
func (s *Sandbox) cleanup() {
	if s.rt.leftover(s.ID) {
		s.rt.destroy(s.ID)
	}
	if err := os.RemoveAll(s.bundle); err != nil {
		s.rt.log.Warn("removing sandbox bundle", "id", s.ID, "err", err)
	}
}

// Wait waits for the run to end, cleans up after it on every path and says
// how it ended. It may be called more than once.
func (s *Sandbox) Wait() Exit {
	s.waitOnce.Do(s.wait)
	return s.exit
}

func (s *Sandbox) wait() {
	<-s.exited
	err, oom := s.waitErr, s.oom
	s.cleanup()
	s.mu.Lock()
	reason := s.reason
	s.mu.Unlock()
	s.exit = classify(s.cmd.ProcessState, err, reason, oom)
	s.exit.Seconds = time.Since(s.started).Seconds()
	s.rt.metrics.runs.WithLabelValues(string(s.exit.End)).Inc()
	s.rt.metrics.seconds.Observe(s.exit.Seconds)
	s.rt.log.Info("sandbox ended", "id", s.ID, "end", s.exit.End, "code", s.exit.Code, "seconds", s.exit.Seconds)
}

func classify(ps *os.ProcessState, err error, reason End, oom bool) Exit {
	var e Exit
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		e.Err = err
	}
	if ps != nil {
		e.Code = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal, e.Code = ws.Signal(), 128+int(ws.Signal())
		}
	}
	if e.Signal == 0 && e.Code > 128 && e.Code <= 128+64 {
		e.Signal = syscall.Signal(e.Code - 128)
	}
	switch {
	case reason != "":
		e.End = reason
	case oom:
		e.End = EndMemory
	case e.Signal != 0:
		e.End = EndSignal
	default:
		e.End = EndExited
	}
	return e
}
