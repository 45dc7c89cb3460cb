package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// nodeProc is one `histor serve` process of the soak, restarted over the same data.
type nodeProc struct {
	n        int // 1-based
	dir      string
	data     string
	desc     string // its descriptor as keygen wrote it, named by the others' members files
	members  string
	logPath  string // the process's standard output and error, every start appended
	origin   string
	httpAddr string
	p2pPort  int
	did      string

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd has ended
	waitErr  error         // cmd's exit, once exited is closed
	stopping bool          // the soak asked it to stop
	paused   bool          // SIGSTOPped
	starts   []time.Time
}

func (p *nodeProc) base() string { return "http://" + p.httpAddr }

func (p *nodeProc) p2pAddrs() []string {
	return []string{fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", p.p2pPort), fmt.Sprintf("/ip4/127.0.0.1/udp/%d/quic-v1", p.p2pPort)}
}

// serveArgs is the node's command line.
func (p *nodeProc) serveArgs(o options, registryURL string) []string {
	args := []string{"--log-level", "info", "serve",
		"--data", p.data, "--seed", filepath.Join(p.data, "seed"),
		"--http", p.httpAddr, "--origin", p.origin, "--public-url", p.base(),
		"--registry", registryURL, "--allow-private-targets", "--curated=false",
		"--crawl-interval", o.interval.String(), "--observe-own-face=true",
		"--checks-per-minute", "-1", "--members", p.members}
	for _, a := range p.p2pAddrs() {
		args = append(args, "--p2p-listen", a)
	}
	return args
}

// start runs the node and waits until /health answers.
func (p *nodeProc) start(ctx context.Context, o options, registryURL string) error {
	out, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening node %d's log file: %w", p.n, err)
	}
	cmd := exec.Command(o.bin, p.serveArgs(o, registryURL)...)
	cmd.Env = cleanEnv()
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so a Ctrl-C reaches the soak, which stops the nodes in order;
	// and a soak that dies takes its nodes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("starting node %d: %w", p.n, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited, p.stopping, p.paused = cmd, exited, false, false
	p.starts = append(p.starts, time.Now())
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		out.Close()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(exited)
	}()
	return p.waitHealthy(ctx, 2*time.Minute)
}

// waitHealthy polls /health until it answers 200, the process ends or limit passes.
func (p *nodeProc) waitHealthy(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if p.hasExited() {
			return fmt.Errorf("node %d exited while starting (%v); see its log", p.n, p.exitErr())
		}
		if code, _, err := get(ctx, p.base()+"/health", 2*time.Second); err == nil && code == http.StatusOK {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("node %d did not answer /health within %s", p.n, limit)
}

func (p *nodeProc) hasExited() bool {
	p.mu.Lock()
	ch := p.exited
	p.mu.Unlock()
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (p *nodeProc) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitErr
}

func (p *nodeProc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// crashed says whether the node ended without the soak asking it to.
func (p *nodeProc) crashed() bool {
	p.mu.Lock()
	stopping := p.stopping
	p.mu.Unlock()
	return !stopping && p.hasExited()
}

// stop sends SIGTERM and waits up to limit for the process to end; after limit it is
// killed. It reports how long the stop took and the exit status.
func (p *nodeProc) stop(limit time.Duration) stopResult {
	p.mu.Lock()
	p.stopping = true
	cmd, exited, paused := p.cmd, p.exited, p.paused
	p.mu.Unlock()
	t0 := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	if paused {
		cmd.Process.Signal(syscall.SIGCONT)
	}
	r := stopResult{}
	select {
	case <-exited:
	case <-time.After(limit):
		r.killed = true
		cmd.Process.Kill()
		<-exited
	}
	r.took = time.Since(t0)
	r.err = p.exitErr()
	return r
}

// stopResult is how one SIGTERM ended.
type stopResult struct {
	took   time.Duration
	killed bool // still running after the limit, then SIGKILLed
	err    error
}

func (r stopResult) clean() bool { return !r.killed && r.err == nil }

func (r stopResult) String() string {
	switch {
	case r.killed:
		return fmt.Sprintf("still running %s after SIGTERM, killed", r.took.Round(time.Second))
	case r.err != nil:
		return fmt.Sprintf("exited after %s: %v", r.took.Round(100*time.Millisecond), r.err)
	default:
		return fmt.Sprintf("exited 0 after %s", r.took.Round(100*time.Millisecond))
	}
}

// pause and resume send SIGSTOP and SIGCONT.
func (p *nodeProc) pause() error  { return p.signal(syscall.SIGSTOP, true) }
func (p *nodeProc) resume() error { return p.signal(syscall.SIGCONT, false) }

func (p *nodeProc) signal(sig syscall.Signal, paused bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("sending %v to node %d: %w", sig, p.n, err)
	}
	p.paused = paused
	return nil
}

func (p *nodeProc) isPaused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// cleanEnv is the environment without HISTOR_* variables, so nothing but the soak's flags
// configures the nodes.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HISTOR_") {
			env = append(env, kv)
		}
	}
	return env
}

// freePort is a loopback port free for TCP and UDP at the moment of asking.
func freePort() (int, error) {
	for try := 0; try < 50; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("finding a free port: %w", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		pc, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			pc.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("finding a port free for TCP and UDP: none in 50 tries")
}
