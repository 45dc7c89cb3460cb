// Package command is the histor command line: it maps flags, HISTOR_* environment variables and
// an optional TOML config file onto each command's configuration, validates it once, and hands
// over to the library packages. It holds no logic of its own beyond that mapping and the one
// place where errors become exit codes.
package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/BurntSushi/toml"
	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/histor-observer/histor/cmd/histor/internal/demo"
	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/node"
)

// Stdio is where a command reads and writes; tests pass buffers.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// deps are the seams tests replace; Main uses the real ones.
type deps struct {
	stdio Stdio
	// runNode runs a node with a validated config until ctx is done.
	runNode func(ctx context.Context, cfg node.Config) error
	// crawlOnce runs one crawl of a node that is not serving.
	crawlOnce func(ctx context.Context, cfg node.Config) (*crawl.Summary, error)
}

// Main runs the histor command line with args (args[0] is the program name) and returns the
// process exit code.
func Main(ctx context.Context, args []string, stdio Stdio) int {
	return run(ctx, args, deps{stdio: stdio, runNode: runNode, crawlOnce: crawlOnce})
}

// runNode is the node's own lifecycle: New, then Run until ctx is done. With a members
// file, each SIGHUP reloads it (a refused file is logged by the node and changes nothing).
func runNode(ctx context.Context, cfg node.Config) error {
	n, err := node.New(cfg)
	if err != nil {
		return err
	}
	if cfg.MembersFile != "" {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-hup:
					n.ReloadMembers()
				}
			}
		}()
	}
	return n.Run(ctx)
}

// crawlOnce is one crawl through the same wiring, without serving.
func crawlOnce(ctx context.Context, cfg node.Config) (*crawl.Summary, error) {
	n, err := node.New(cfg)
	if err != nil {
		return nil, err
	}
	return n.CrawlOnce(ctx)
}

func run(ctx context.Context, args []string, d deps) int {
	app := newApp(d)
	return exitCode(app.RunContext(ctx, interspersed(app, args)), d.stdio.Err)
}

// configFlag names the TOML file every command reads its flags from.
const configFlag = "config"

func newApp(d deps) *cli.App {
	app := &cli.App{
		Name:  "histor",
		Usage: "an independent observer of MCP tool definitions with an append-only, witnessed log",
		Description: "Every flag can also be set through the HISTOR_* environment variable named in its help, " +
			"or as a key of the same name in the TOML file given by --config. A flag on the command line wins " +
			"over the environment, which wins over the file, which wins over the default.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: configFlag, Usage: "read flag values from this TOML `FILE` (keys are flag names)", EnvVars: []string{"HISTOR_CONFIG"}},
			altsrc.NewStringFlag(&cli.StringFlag{Name: "log-level", Value: "info", Usage: "least severe log message to print, `LEVEL`: debug, info, warn or error", EnvVars: []string{"HISTOR_LOG_LEVEL"}}),
		},
		Commands: []*cli.Command{
			serveCommand(d), crawlCommand(d), digestCommand(d), keygenCommand(d), labelCommand(d), auditCommand(d), logCommand(d), demo.Command(),
			withWorkerCommands(sandboxCommand(d), d),
		},
		Action:    unknownCommand,
		Reader:    d.stdio.In,
		Writer:    d.stdio.Out,
		ErrWriter: d.stdio.Err,
		// Errors become exit codes in exitCode, once; urfave/cli must not exit by itself.
		ExitErrHandler:       func(*cli.Context, error) {},
		HideVersion:          true,
		EnableBashCompletion: false,
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError(err)
		},
	}
	app.Before = configBefore(app.Flags)
	withConfigFile(app.Commands)
	return app
}

// withConfigFile makes every leaf command read its flags from the --config file before its
// action runs. altsrc only fills a flag that is neither on the command line nor in its
// environment variable, which gives the documented precedence.
func withConfigFile(cmds []*cli.Command) {
	for _, c := range cmds {
		if len(c.Subcommands) > 0 {
			withConfigFile(c.Subcommands)
			continue
		}
		if c.OnUsageError == nil {
			c.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return usageError(err) }
		}
		c.Before = configBefore(c.Flags)
	}
}

// configBefore fills flags from the config file; any problem with the file is a usage error.
func configBefore(flags []cli.Flag) cli.BeforeFunc {
	return func(c *cli.Context) error {
		src, err := configSource(c)
		if err != nil {
			return err
		}
		if err := altsrc.ApplyInputSourceValues(c, src, flags); err != nil {
			return usageError(fmt.Errorf("reading --config %s: %w", c.String(configFlag), err))
		}
		return checkPathFlags(c, flags)
	}
}

// usagePlaceholder is the `NAME` a flag's usage text gives its value, as the help prints it.
func usagePlaceholder(usage string) string {
	_, rest, ok := strings.Cut(usage, "`")
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, "`")
	if !ok {
		return ""
	}
	return name
}

// checkPathFlags refuses a FILE, DIR or PATH flag whose value starts with "-": in "--rootfs
// --skip-root-check" the next flag was taken as the path, and a folder of that name was made.
// A path that really starts with "-" can be given as ./-name.
func checkPathFlags(c *cli.Context, flags []cli.Flag) error {
	for _, f := range flags {
		df, ok := f.(cli.DocGenerationFlag)
		if !ok {
			continue
		}
		placeholder := usagePlaceholder(df.GetUsage())
		if placeholder != "FILE" && placeholder != "DIR" && placeholder != "PATH" {
			continue
		}
		name := f.Names()[0]
		// A repeatable flag (--peer) holds each of its values; c.String reads a single one.
		for _, v := range append(c.StringSlice(name), c.String(name)) {
			if strings.HasPrefix(v, "-") {
				return usageError(fmt.Errorf("--%s %q: a %s that starts with \"-\" looks like a flag given no value; write ./%s if it is meant", name, v, placeholder, v))
			}
		}
	}
	return nil
}

// configSource opens the --config file, if any, for altsrc. A key that names no flag of any
// command is refused rather than ignored: a misspelt setting must not silently keep its default.
func configSource(c *cli.Context) (altsrc.InputSourceContext, error) {
	if c.IsSet(configFlag) {
		if err := checkConfigKeys(c.String(configFlag), flagNames(c.App)); err != nil {
			return nil, usageError(err)
		}
	}
	src, err := altsrc.NewTomlSourceFromFlagFunc(configFlag)(c)
	if err != nil {
		return nil, usageError(fmt.Errorf("reading --config %s: %w", c.String(configFlag), err))
	}
	return src, nil
}

func checkConfigKeys(path string, known map[string]bool) error {
	var m map[string]any
	if _, err := toml.DecodeFile(path, &m); err != nil {
		return fmt.Errorf("reading --config %s: %w", path, err)
	}
	for k := range m {
		if !known[k] || k == configFlag {
			return fmt.Errorf("reading --config %s: %q is not a histor setting", path, k)
		}
	}
	return nil
}

// flagNames is every flag name of the app and its commands.
func flagNames(app *cli.App) map[string]bool {
	names := map[string]bool{}
	add := func(flags []cli.Flag) {
		for _, f := range flags {
			for _, n := range f.Names() {
				names[n] = true
			}
		}
	}
	add(app.Flags)
	var walk func([]*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, c := range cmds {
			add(c.Flags)
			walk(c.Subcommands)
		}
	}
	walk(app.Commands)
	return names
}

// logger builds the structured logger every command passes down.
func logger(c *cli.Context, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, usageError(fmt.Errorf("--log-level %q: want debug, info, warn or error", c.String("log-level")))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), nil
}

// exitError carries a command's exit code to the one place that turns it into a status.
type exitError struct {
	code int
	err  error // printed to stderr when not nil
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exit ends a command with code, printing nothing more: the command already said why.
func exit(code int) error {
	if code == 0 {
		return nil
	}
	return &exitError{code: code}
}

// usageError is a mistake in how histor was called: exit status 2.
func usageError(err error) error { return &exitError{code: 2, err: err} }

// exitCode is the single path from an error to a process status.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "histor: %v\n", ee.err)
		}
		return ee.code
	}
	var coder cli.ExitCoder
	if errors.As(err, &coder) {
		if msg := strings.TrimSpace(err.Error()); msg != "" {
			fmt.Fprintf(stderr, "histor: %s\n", msg)
		}
		return coder.ExitCode()
	}
	fmt.Fprintf(stderr, "histor: %v\n", err)
	return 1
}

// unknownCommand runs when no command matched: help for a bare "histor", a usage error otherwise.
func unknownCommand(c *cli.Context) error {
	if c.Args().Present() {
		return usageError(fmt.Errorf("unknown command %q; see histor help", c.Args().First()))
	}
	if err := cli.ShowAppHelp(c); err != nil {
		return err
	}
	return exit(2)
}
