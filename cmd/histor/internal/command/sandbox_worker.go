package command

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/histor-observer/histor/node"
	"github.com/histor-observer/histor/sandbox/queue"
)

// sandboxWorkerCommands are the subcommands of `histor sandbox` that serve
// a node's queue: worker and worker-key.
func sandboxWorkerCommands(d deps) []*cli.Command {
	return []*cli.Command{sandboxWorkerCommand(d), sandboxWorkerKeyCommand(d)}
}

// withWorkerCommands adds worker and worker-key to the sandbox command as
// its subcommands. A command with subcommands is passed over by
// withConfigFile, so the sandbox command's own config-file reading and
// usage errors are set here.
func withWorkerCommands(sb *cli.Command, d deps) *cli.Command {
	sb.Subcommands = append(sb.Subcommands, sandboxWorkerCommands(d)...)
	sb.Before = configBefore(sb.Flags)
	if sb.OnUsageError == nil {
		sb.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return usageError(err) }
	}
	return sb
}

func sandboxWorkerCommand(d deps) *cli.Command {
	return &cli.Command{
		Name:      "worker",
		Usage:     "take sandbox jobs from a node's queue, observe each package in gVisor and send the observation back",
		UsageText: "histor sandbox worker --queue URL --worker-seed FILE [--tls-ca FILE] [--tls-cert FILE --tls-key FILE] [--concurrency N]",
		Description: "Connects to the node's NATS queue with the NKey in --worker-seed (make one with `histor sandbox worker-key`, and " +
			"list its public key in the node's --sandbox-worker-key), then observes one job per slot until SIGTERM or SIGINT. " +
			"A job is acknowledged only once its result is stored; a worker that dies has its jobs redelivered. Needs root, " +
			"runsc and the Debian roots (built on first start with mmdebstrap).",
		Flags: append([]cli.Flag{
			altsrc.NewStringFlag(&cli.StringFlag{Name: "queue", Usage: "the node's queue `URL`, nats://host:4222 or tls://host:4222 (the node's --nats-listen, or the cluster of its --nats)", EnvVars: []string{"HISTOR_WORKER_QUEUE"}}),
			altsrc.NewStringFlag(&cli.StringFlag{Name: "worker-seed", Usage: "the worker's NKey seed `FILE` (mode 0600)", EnvVars: []string{"HISTOR_SANDBOX_WORKER_SEED"}}),
			altsrc.NewStringFlag(&cli.StringFlag{Name: "tls-ca", Usage: "trust the node's certificate from this PEM `FILE` (implies TLS)", EnvVars: []string{"HISTOR_WORKER_TLS_CA"}}),
			altsrc.NewStringFlag(&cli.StringFlag{Name: "tls-cert", Usage: "client certificate PEM `FILE` for mTLS", EnvVars: []string{"HISTOR_WORKER_TLS_CERT"}}),
			altsrc.NewStringFlag(&cli.StringFlag{Name: "tls-key", Usage: "client key PEM `FILE` for mTLS", EnvVars: []string{"HISTOR_WORKER_TLS_KEY"}}),
			altsrc.NewIntFlag(&cli.IntFlag{Name: "concurrency", Usage: "run at most `N` observations at once (default: one per CPU, as memory allows at 640 MiB each)", EnvVars: []string{"HISTOR_SANDBOX_CONCURRENCY"}}),
			altsrc.NewDurationFlag(&cli.DurationFlag{Name: "retry-delay", Value: 30 * time.Second, Usage: "a job this host could not observe (the sandbox or a registry failed) goes back for another delivery after `DURATION`", EnvVars: []string{"HISTOR_SANDBOX_RETRY_DELAY"}}),
			altsrc.NewStringFlag(&cli.StringFlag{Name: "npm-registry", Usage: "resolve and install npm packages from `URL`", EnvVars: []string{"HISTOR_NPM_REGISTRY"}}),
			altsrc.NewStringFlag(&cli.StringFlag{Name: "pypi", Usage: "the PyPI JSON API's base `URL`", EnvVars: []string{"HISTOR_PYPI"}}),
		}, sandboxHostFlags("", "the user cache directory's histor/sandbox")...),
		Action: func(c *cli.Context) error { return sandboxWorkerAction(c) },
	}
}

func sandboxWorkerAction(c *cli.Context) error {
	if c.String("queue") == "" || c.String("worker-seed") == "" {
		return usageError(errors.New("sandbox worker: --queue and --worker-seed are required"))
	}
	log, err := logger(c, c.App.ErrWriter)
	if err != nil {
		return err
	}
	tc, err := workerTLS(c)
	if err != nil {
		return usageError(err)
	}
	host, err := sandboxHost(c).WithDefaults()
	if err != nil {
		return usageError(err)
	}
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	w, err := node.NewSandboxWorker(ctx, node.WorkerSettings{
		Queue: queue.WorkerConfig{URL: c.String("queue"), SeedFile: c.String("worker-seed"), TLS: tc,
			Concurrency: c.Int("concurrency"), NakDelay: c.Duration("retry-delay")},
		Host: host, Logger: log,
	})
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("sandbox worker: %w", err)}
	}
	defer w.Close()
	log.Info("sandbox worker taking jobs", "worker", w.Name(), "queue", c.String("queue"))
	if err := w.Run(ctx); err != nil {
		return &exitError{code: 1, err: fmt.Errorf("sandbox worker: %w", err)}
	}
	return nil
}

// workerTLS is the worker's TLS: the node's CA and, for mTLS, a client
// certificate. Nil (plaintext) when none of the three is given.
func workerTLS(c *cli.Context) (*tls.Config, error) {
	ca, cert, key := c.String("tls-ca"), c.String("tls-cert"), c.String("tls-key")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate", ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("loading the client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

func sandboxWorkerKeyCommand(d deps) *cli.Command {
	return &cli.Command{
		Name:      "worker-key",
		Usage:     "make a sandbox worker's NKey: write its seed to FILE (mode 0600) and print its public key",
		UsageText: "histor sandbox worker-key FILE",
		Description: "The public key (U…) goes into the node's --sandbox-worker-key; the seed stays on the worker's host and " +
			"is its password. An existing FILE is never replaced.",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError(errors.New("sandbox worker-key: want exactly one FILE"))
			}
			pub, err := queue.CreateSeedFile(c.Args().First())
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("sandbox worker-key: %w", err)}
			}
			fmt.Fprintln(d.stdio.Out, pub)
			return nil
		},
	}
}
