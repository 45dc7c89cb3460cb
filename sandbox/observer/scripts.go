package observer

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/gvisor"
	"github.com/histor-observer/histor/sandbox/pkgs"
)

// The reasons an install-scripts phase is incomplete beyond its trace's.
const (
	ReasonScriptsTimedOut = "scripts-timed-out" // stopped at the install bound
	ReasonScriptsFailed   = "scripts-failed"    // ended with a status other than 0
)

// scripts is the install scripts' stage, when the lifecycle scan found
// packages with them: `npm rebuild --foreground-scripts` in the sandbox, on
// a writable copy of the install, in a trap network of its own, bounded by
// the install limit. The run stage then mounts what the scripts left. What
// the scripts did is recorded; how they ended never stops the observation.
func (r *run) scripts(ctx context.Context) bool {
	if len(r.installed.Record.ScriptPackages) == 0 || r.resolved.Spec.Kind != pkgs.NPM {
		return true
	}
	began := time.Now()
	phase, err := r.runScripts(ctx)
	if err != nil {
		r.stage("scripts", "failed", began, err.Error())
		return r.fail(sandbox.StatusSandboxUnavailable, "install scripts: "+err.Error())
	}
	r.obs.Install.Scripts = phase
	status := "ok"
	switch {
	case phase.TimedOut:
		status = "timeout"
	case phase.ExitCode != nil && *phase.ExitCode != 0:
		status = "failed"
	}
	r.stage("scripts", status, began, fmt.Sprintf("%d packages", len(r.installed.Record.ScriptPackages)))
	return ctx.Err() == nil
}

func (r *run) runScripts(ctx context.Context) (*sandbox.Phase, error) {
	pkgDir := filepath.Join(r.dir, "scripts-pkg")
	if err := copyTree(ctx, r.installed.Dir, pkgDir); err != nil {
		return nil, err
	}
	if err := chownTree(pkgDir, sandboxUID); err != nil {
		return nil, err
	}
	b, err := r.openBox(ctx, "scripts")
	if err != nil {
		return nil, err
	}
	defer b.close(r)
	// npm's own user config is /dev/null, so its reads of the decoy
	// ~/.npmrc are the scripts'. Its global config stays the root's own:
	// npm refuses to load one file as both ("double-loading config").
	env := append(r.baseEnv(), "NPM_CONFIG_USERCONFIG=/dev/null",
		"NPM_CONFIG_CACHE=/tmp/npm-cache", "NPM_CONFIG_UPDATE_NOTIFIER=false", "NPM_CONFIG_AUDIT=false", "NPM_CONFIG_FUND=false")
	spec := r.runSpec(b, pkgDir, true, []string{"/usr/bin/npm", "rebuild", "--foreground-scripts"}, env)
	spec.Cwd = pkgs.MountPoint
	out := &tailBuffer{}
	spec.Stdout, spec.Stderr, spec.Stdin = out, out, emptyReader{}
	sctx, cancel := context.WithTimeout(ctx, seconds(r.limits.InstallSeconds))
	defer cancel()
	started := time.Now()
	sb, err := r.o.runtime.Start(sctx, spec)
	if err != nil {
		return nil, fmt.Errorf("starting the sandbox: %w", err)
	}
	exit := sb.Wait()
	b.close(r)
	phase := r.phases(b, []window{{"scripts", started, time.Now()}})[0]
	code := exit.Code
	phase.ExitCode, phase.TimedOut = &code, exit.End == gvisor.EndDeadline
	switch { // HISTOR's rule: only scripts that ended by themselves, with status 0, are a whole record
	case phase.TimedOut:
		phase.IncompleteReasons = append(phase.IncompleteReasons, ReasonScriptsTimedOut)
	case code != 0:
		phase.IncompleteReasons = append(phase.IncompleteReasons, ReasonScriptsFailed)
	}
	finish(&phase)
	r.installed.Dir = pkgDir
	if code != 0 {
		r.obs.Install.Detail = joinDetail(r.obs.Install.Detail, "install scripts: "+exit.String()+": "+pkgs.Tail(out.String(), pkgs.TailChars))
	}
	return &phase, nil
}

// chownTree hands every file under dir to uid, without following links.
func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, io.EOF }
