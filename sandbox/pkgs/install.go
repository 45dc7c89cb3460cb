package pkgs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/histor-observer/histor/sandbox"
)

// Installed is an install the runner can mount and start.
type Installed struct {
	// Dir is the host directory to mount read-only at MountPoint.
	Dir string
	// Command starts the server inside the sandbox: node or python3 and
	// paths under MountPoint. Empty when the package has no entry point.
	Command []string
	// Env is what the command needs beyond the runner's own environment
	// (PYTHONPATH for PyPI).
	Env []string
	// Record is the Observation's install member. Its ScriptPackages are
	// the packages whose install scripts the traced scripts stage must run.
	Record sandbox.InstallRecord
}

// Install downloads r's artifact (checked against its published digest)
// into work, installs it on the host into work/pkg, finds the packages with
// install scripts and the entry point. work must be an empty directory the
// caller owns and removes. No package code runs: npm runs with
// --ignore-scripts, pip installs wheels only.
//
// The *Installed is returned with its Record also when err is set; err's
// status (StatusOf) is install-failed, not-found or no-entry-point.
func (p *Packages) Install(ctx context.Context, r *Resolved, work string) (*Installed, error) {
	in := &Installed{Dir: filepath.Join(work, "pkg"), Record: sandbox.InstallRecord{Status: "failed", ScriptPackages: []string{}}}
	start := time.Now()
	defer func() { in.Record.Seconds = time.Since(start).Seconds() }()
	artifact, err := p.artifact(ctx, r, work)
	if err == nil {
		err = p.install(ctx, r, artifact, work, in)
	}
	if err != nil {
		in.Record.Detail = DetailOf(err)
		if errors.Is(err, context.DeadlineExceeded) {
			in.Record.Status = "timeout"
		}
		return in, err
	}
	in.Record.Status = "ok"
	return in, p.entry(r, in)
}

// artifact is the path of the verified tarball or wheel.
func (p *Packages) artifact(ctx context.Context, r *Resolved, work string) (string, error) {
	for _, d := range []string{"pkg", "home", "download"} {
		if err := os.Mkdir(filepath.Join(work, d), 0o755); err != nil {
			return "", fmt.Errorf("preparing the install: %w", err)
		}
	}
	name := "package.tgz"
	if r.Spec.Kind == PyPI {
		name = r.Filename // pip reads the tags from it; checked at resolve
	}
	path := filepath.Join(work, "download", name)
	if r.Spec.File != "" {
		return path, copyLocal(r.Spec.File, path, r.check, p.cfg.MaxArtifact)
	}
	return path, p.download(ctx, r.URL, path, r.check)
}

// copyLocal copies a local artifact beside a downloaded one, checked again
// against the digest read at resolve, so the file installed is the file
// resolved.
func copyLocal(src, dst string, d digest, limit int64) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("opening %s: %w", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("creating %s: %w", dst, err)
	}
	err = copyChecked(out, in, d, limit)
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("writing %s: %w", dst, cerr)
	}
	return err
}

func (p *Packages) install(ctx context.Context, r *Resolved, artifact, work string, in *Installed) error {
	if r.Spec.Kind == NPM {
		if err := p.npmInstall(ctx, artifact, work, in.Dir); err != nil {
			return err
		}
		scripts, err := LifecyclePackages(in.Dir)
		in.Record.ScriptPackages = scripts
		return err
	}
	return p.pipInstall(ctx, artifact, work, in.Dir)
}

func (p *Packages) entry(r *Resolved, in *Installed) error {
	var err error
	if r.Spec.Kind == NPM {
		in.Command, err = NPMEntry(in.Dir, r.Spec.Name)
	} else {
		in.Command, err = PyPIEntry(in.Dir, r.Spec.Name)
		in.Env = []string{"PYTHONPATH=" + MountPoint, "PYTHONDONTWRITEBYTECODE=1"}
	}
	return err
}

// tailBuffer keeps the last bytes an installer wrote: its final lines say
// why it failed, and a chatty installer must not grow memory.
type tailBuffer struct{ b []byte }

const tailKeep = 64 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > tailKeep {
		t.b = append(t.b[:0], t.b[len(t.b)-tailKeep:]...)
	}
	return len(p), nil
}

// run runs an installer with exactly env, in its own process group so a
// timeout kills every child it started.
func (p *Packages) run(ctx context.Context, argv, env []string, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.InstallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	switch {
	case err == nil:
		return nil
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fail(sandbox.StatusInstallFailed, ctx.Err(), "install timed out after %s", p.cfg.InstallTimeout)
	case ctx.Err() != nil:
		return fail(sandbox.StatusInspectionFailed, ctx.Err(), "install cancelled")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return fail(sandbox.StatusInspectionFailed, err, "starting %s failed", filepath.Base(argv[0]))
	}
	return fail(sandbox.StatusInstallFailed, err, "%s", Tail(string(bytes.ToValidUTF8(out.b, nil)), TailChars))
}

// hostEnv is the installers' whole environment: PATH, an empty HOME, the
// host's certificate trust and proxy settings (which the Go client making
// the other registry requests follows too), and what the caller adds.
// Nothing else of the operator's environment or configuration (tokens,
// registry settings) reaches them.
func hostEnv(home string, extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8"}
	for _, k := range hostTrust {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}

// hostTrust are the variables that say which certificate authorities and
// proxies the host uses: without them npm (whose own CA list is Node's
// bundled one) fails behind a TLS-inspecting proxy with
// SELF_SIGNED_CERT_IN_CHAIN.
var hostTrust = []string{
	"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR",
	"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
}
