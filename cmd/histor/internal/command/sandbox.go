package command

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/observer"
	"github.com/histor-observer/histor/sandbox/pkgs"
	"github.com/histor-observer/histor/sandbox/rootfs"
)

// sandboxCommand is `histor sandbox SPEC` and `histor sandbox roots`. It is
// one leaf command (roots is its first argument, not a subcommand) so that
// flags after SPEC are read as flags.
func sandboxCommand(d deps) *cli.Command {
	def := sandbox.DefaultLimits()
	return &cli.Command{
		Name:      "sandbox",
		Usage:     "observe one npm or PyPI MCP server package in gVisor, or build its roots",
		ArgsUsage: "SPEC | roots",
		Description: "SPEC is npm:<name>@<version>, pypi:<name>==<version>, or a local .tgz or .whl file. The package is " +
			"installed on this host (no package code runs there), its install scripts and then the server run under " +
			"runsc where the only network is histor's traps, and what happened is printed: a progress line per stage " +
			"on stderr and a summary, or the whole observation with --json. The exit status is 0 whatever the package " +
			"did; 2 for a malformed SPEC, 3 when the sandbox cannot run here. \"histor sandbox roots\" builds (or checks) " +
			"the Debian roots in the root cache.",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the observation as JSON", EnvVars: []string{"HISTOR_SANDBOX_JSON"}},
			altsrc.NewBoolFlag(&cli.BoolFlag{Name: "no-install-cache", Usage: "install every package afresh instead of reusing an install with the same integrity", EnvVars: []string{"HISTOR_NO_INSTALL_CACHE"}}),
			altsrc.NewStringFlag(&cli.StringFlag{Name: "npm-registry", Usage: "resolve and install npm packages from `URL`", EnvVars: []string{"HISTOR_NPM_REGISTRY"}}),
			altsrc.NewStringFlag(&cli.StringFlag{Name: "pypi", Usage: "the PyPI JSON API's base `URL`", EnvVars: []string{"HISTOR_PYPI"}}),
			altsrc.NewStringSliceFlag(&cli.StringSliceFlag{Name: "env", Usage: "give environment variable `NAME` a placeholder (repeatable)", EnvVars: []string{"HISTOR_SANDBOX_ENV"}}),
			altsrc.NewInt64Flag(&cli.Int64Flag{Name: "memory", Value: def.MemoryBytes, Usage: "memory limit of a run in `BYTES`", EnvVars: []string{"HISTOR_SANDBOX_MEMORY"}}),
			altsrc.NewInt64Flag(&cli.Int64Flag{Name: "tmp-bytes", Value: def.TmpBytes, Usage: "size of the run's /tmp in `BYTES`", EnvVars: []string{"HISTOR_SANDBOX_TMP_BYTES"}}),
			altsrc.NewIntFlag(&cli.IntFlag{Name: "pids", Value: def.Pids, Usage: "at most `N` tasks in a run", EnvVars: []string{"HISTOR_SANDBOX_PIDS"}}),
			altsrc.NewFloat64Flag(&cli.Float64Flag{Name: "install-seconds", Value: def.InstallSeconds, Usage: "bound of the install and of the install scripts, `SECONDS`", EnvVars: []string{"HISTOR_SANDBOX_INSTALL_SECONDS"}}),
			altsrc.NewFloat64Flag(&cli.Float64Flag{Name: "run-seconds", Value: def.RunSeconds, Usage: "bound from the server's start to its last answer, `SECONDS`", EnvVars: []string{"HISTOR_SANDBOX_RUN_SECONDS"}}),
			altsrc.NewFloat64Flag(&cli.Float64Flag{Name: "call-seconds", Value: def.CallSeconds, Usage: "bound of one tool call, `SECONDS`", EnvVars: []string{"HISTOR_SANDBOX_CALL_SECONDS"}}),
			altsrc.NewIntFlag(&cli.IntFlag{Name: "calls", Value: def.Calls, Usage: "call at most `N` tools (negative: none)", EnvVars: []string{"HISTOR_SANDBOX_CALLS"}}),
		}, sandboxHostFlags("", "the user cache directory's histor/sandbox")...),
		Action: func(c *cli.Context) error { return sandboxAction(c, d) },
	}
}

func sandboxAction(c *cli.Context, d deps) error {
	if c.NArg() != 1 {
		return usageError(errors.New("sandbox takes one SPEC (or roots)"))
	}
	log, err := logger(c, d.stdio.Err)
	if err != nil {
		return err
	}
	cfg, err := sandboxConfig(c)
	if err != nil {
		return err
	}
	cfg.Logger = log
	if c.Args().First() == "roots" {
		return sandboxRoots(c, d, cfg)
	}
	spec, err := pkgs.ParseSpec(c.Args().First())
	if err != nil {
		return usageError(err)
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	o, err := observer.New(ctx, cfg)
	if err != nil {
		return &exitError{code: 3, err: err}
	}
	defer o.Close()
	opts := observer.Options{Env: c.StringSlice("env")}
	if !c.Bool("json") {
		opts.Progress = func(s sandbox.Stage) { fmt.Fprintln(d.stdio.Err, observer.ProgressLine(s)) }
	}
	obs, err := o.Observe(ctx, spec, opts)
	if err != nil {
		return usageError(err)
	}
	if c.Bool("json") {
		var out []byte
		if out, err = canon.MarshalPlainIndent(obs, "  "); err == nil {
			_, err = d.stdio.Out.Write(out)
		}
	} else {
		err = observer.WriteSummary(d.stdio.Out, obs)
	}
	if err != nil {
		return err
	}
	if obs.Status == sandbox.StatusSandboxUnavailable {
		return &exitError{code: 3, err: fmt.Errorf("sandbox unavailable: %s", obs.Detail)}
	}
	return nil
}

// sandboxConfig maps the flags onto observer.Config.
func sandboxConfig(c *cli.Context) (observer.Config, error) {
	cfg, err := sandboxHost(c).Config()
	if err != nil {
		return observer.Config{}, usageError(err)
	}
	cfg.Limits = sandbox.Limits{
		MemoryBytes: c.Int64("memory"), TmpBytes: c.Int64("tmp-bytes"), Pids: c.Int("pids"), CPUs: 1,
		InstallSeconds: c.Float64("install-seconds"), RunSeconds: c.Float64("run-seconds"),
		CallSeconds: c.Float64("call-seconds"), Calls: c.Int("calls"),
	}
	return cfg, nil
}

// sandboxHostFlags are the flags sandboxHost reads, declared once for every command that
// observes on this host: `histor sandbox`, `histor sandbox worker` and serve's local workers.
// prefix begins each usage; dirDefault names --sandbox-dir's default.
func sandboxHostFlags(prefix, dirDefault string) []cli.Flag {
	return []cli.Flag{
		altsrc.NewStringFlag(&cli.StringFlag{Name: "sandbox-dir", Usage: prefix + "keep the runs' work files and install cache in `DIR` (default: " + dirDefault + ")", EnvVars: []string{"HISTOR_SANDBOX_DIR"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "rootfs", Usage: prefix + "the Debian roots' cache `DIR` (default: the user cache directory's histor/rootfs)", EnvVars: []string{"HISTOR_ROOTFS_CACHE"}}),
		altsrc.NewInt64Flag(&cli.Int64Flag{Name: "work-bytes", Value: observer.DefaultWorkBytes, Usage: prefix + "an observation writes at most `BYTES` on the host (its work directory is a tmpfs this size)", EnvVars: []string{"HISTOR_SANDBOX_WORK_BYTES"}}),
		altsrc.NewInt64Flag(&cli.Int64Flag{Name: "install-cache-bytes", Value: observer.DefaultInstallCacheBytes, Usage: prefix + "keep at most `BYTES` of installed packages, least recently used evicted first", EnvVars: []string{"HISTOR_SANDBOX_INSTALL_CACHE_BYTES"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "pypi-index", Usage: prefix + "the PEP 503 simple index pip installs from, `URL`", EnvVars: []string{"HISTOR_PYPI_INDEX"}}),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "skip-root-check", Usage: prefix + "trust the roots' records instead of recomputing their digests", EnvVars: []string{"HISTOR_SKIP_ROOT_CHECK"}}),
	}
}

// sandboxHost maps the flags `histor sandbox` and `histor sandbox worker` share onto
// observer.Host; a flag a command does not have reads as unset.
func sandboxHost(c *cli.Context) observer.Host {
	return observer.Host{
		Dir: c.String("sandbox-dir"), RootfsDir: c.String("rootfs"), SkipRootCheck: c.Bool("skip-root-check"),
		NoInstallCache: c.Bool("no-install-cache"),
		NPMRegistry:    c.String("npm-registry"), PyPI: c.String("pypi"), PyPIIndex: c.String("pypi-index"),
		WorkBytes: c.Int64("work-bytes"), InstallCacheBytes: c.Int64("install-cache-bytes"),
	}
}

// sandboxRoots builds or checks both roots and prints their digests.
func sandboxRoots(c *cli.Context, d deps, cfg observer.Config) error {
	rc := &rootfs.Cache{Dir: cfg.RootfsDir, Verify: !cfg.SkipRootCheck, Logger: cfg.Logger}
	for _, k := range []rootfs.Kind{rootfs.Node, rootfs.Python} {
		r, err := rc.Ensure(c.Context, k)
		if err != nil {
			return &exitError{code: 3, err: fmt.Errorf("sandbox roots: %s: %w", k, err)}
		}
		fmt.Fprintf(d.stdio.Out, "%s\t%s\t%s\t%d files\n", k, r.Digest, r.Suite, r.Files)
	}
	return nil
}
