package observer

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/gvisor"
	"github.com/histor-observer/histor/sandbox/pkgs"
	"github.com/histor-observer/histor/sandbox/stdio"
	"github.com/histor-observer/histor/sandbox/trap"
)

// decoyNote is the decoy file path-like tool arguments are given.
var decoyNote = path.Join(trap.HomeInSandbox, "notes", "canary.txt")

// killGrace is how long past the session bound the sandbox may live before
// its context kills it: the session ends first and Kill follows at once, so
// this only bounds a session that failed to end.
const killGrace = 10 * time.Second

// serve is the run and talk stages: the server under runsc in its trap
// network, MCP over its stdio, then the sandbox killed and its records read.
func (r *run) serve(ctx context.Context) bool {
	began := time.Now()
	b, err := r.openBox(ctx, "run")
	if err != nil {
		r.stage("run", "failed", began, err.Error())
		return r.fail(sandbox.StatusSandboxUnavailable, err.Error())
	}
	defer b.close(r)
	l := r.limits
	stderr := &tailBuffer{}
	spec := r.runSpec(b, r.installed.Dir, false, r.installed.Command, append(r.baseEnv(), r.installed.Env...))
	spec.Stderr = stderr
	runCtx, cancel := context.WithTimeout(ctx, seconds(l.RunSeconds)+killGrace)
	defer cancel()
	started := time.Now()
	sb, err := r.o.runtime.Start(runCtx, spec)
	if err != nil {
		r.stage("run", "failed", began, err.Error())
		return r.fail(sandbox.StatusSandboxUnavailable, "starting the sandbox: "+err.Error())
	}
	r.stage("run", "ok", began, sb.ID)
	res := stdio.Talk(ctx, r.talkConfig(), stdio.Run{Stdin: sb.Stdin, Stdout: sb.Stdout, Started: started,
		Canary: stdio.Canary{Run: r.tag, DecoyPath: decoyNote}})
	sb.Kill()
	if r.o.talkHook != nil {
		r.o.talkHook(res)
	}
	exit := sb.Wait()
	b.close(r) // the traps finish what they hold before the records are read
	ended := time.Now()
	r.talked(res, exit, stderr)
	r.stage("talk", string(r.obs.Status), res.Started, fmt.Sprintf("%d tools, %d calls; sandbox %s", len(res.Tools), res.Calls.Attempted, exit))
	r.behaviour(b, res, started, ended)
	return true
}

func (r *run) talkConfig() stdio.Config {
	l := r.limits
	calls := l.Calls
	if calls == 0 {
		calls = -1
	}
	return stdio.Config{
		SessionTimeout: seconds(l.RunSeconds), CallTimeout: seconds(l.CallSeconds), MaxCalls: calls,
		ClientVersion: r.o.cfg.Observer, Logger: r.o.log,
	}
}

// talked copies the session's result into the observation: status, tools
// and their digest, the calls, and why a run that did not answer ended.
func (r *run) talked(res *stdio.Result, exit gvisor.Exit, stderr *tailBuffer) {
	r.obs.Status, r.obs.Detail = res.Status, res.Detail
	r.obs.Calls = res.Calls
	if r.obs.Calls.Outcomes == nil {
		r.obs.Calls.Outcomes = []sandbox.CallOutcome{}
	}
	if res.ServerInfo != nil {
		r.obs.ServerInfo = res.ServerInfo
	}
	r.obs.ProtocolVersion = res.ProtocolVersion
	if exit.End == gvisor.EndMemory { // also after the listing: a call can end the sandbox
		r.obs.Detail = joinDetail(r.obs.Detail, "the sandbox reached its memory limit and was killed")
	}
	if res.Status == sandbox.StatusOK {
		r.obs.Tools = res.Tools
		r.digest(res.Tools)
		return
	}
	if res.Status == sandbox.StatusExited || res.Status == sandbox.StatusTimeout {
		if tail := pkgs.Tail(stderr.String(), pkgs.TailChars); tail != "" {
			r.obs.Detail = joinDetail(r.obs.Detail, "stderr: "+tail)
		}
	}
}

// digest is the MTL/1 tool-set digest, the crawler's for the same tools, or
// the MTL code saying why there is none.
func (r *run) digest(tools []any) {
	d, err := mtl.Digest(tools)
	if err == nil {
		r.obs.ToolSetDigest = d
		return
	}
	var refusal *mtl.Refusal
	if errors.As(err, &refusal) {
		r.obs.DigestError = refusal.Code
		return
	}
	r.obs.DigestError = mtl.CodeInput
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
