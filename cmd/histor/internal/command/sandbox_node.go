package command

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/node"
)

// sandboxNodeFlags are node.Config.Sandbox's fields a serving node takes,
// and the curated list; node.SandboxConfig documents their meaning.
func sandboxNodeFlags() []cli.Flag {
	return append([]cli.Flag{
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "curated", Value: true, Usage: "also observe histor's curated list (remote servers and npm/PyPI packages the registry does not list)", EnvVars: []string{"HISTOR_CURATED"}}),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "sandbox", Usage: "queue package observations for sandbox workers (implied by --nats, --sandbox-worker-key and --sandbox-workers)", EnvVars: []string{"HISTOR_SANDBOX"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "nats", Usage: "queue jobs on the external NATS JetStream cluster at `URL` instead of the embedded server", EnvVars: []string{"HISTOR_NATS"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "nats-listen", Value: "127.0.0.1:4222", Usage: "the embedded queue accepts workers on `ADDR` (it listens only when a worker key is given)", EnvVars: []string{"HISTOR_NATS_LISTEN"}}),
		altsrc.NewStringSliceFlag(&cli.StringSliceFlag{Name: "sandbox-worker-key", Usage: "let the worker with NKey public key `KEY` (U…, from `histor sandbox worker-key`) take jobs; repeatable", EnvVars: []string{"HISTOR_SANDBOX_WORKER_KEYS"}}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "sandbox-workers", Usage: "also observe `N` packages at once inside this node (needs root, runsc and the Debian roots)", EnvVars: []string{"HISTOR_SANDBOX_WORKERS"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "nats-tls-cert", Usage: "require TLS of workers, with this certificate PEM `FILE`", EnvVars: []string{"HISTOR_NATS_TLS_CERT"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "nats-tls-key", Usage: "the key PEM `FILE` of --nats-tls-cert", EnvVars: []string{"HISTOR_NATS_TLS_KEY"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "nats-tls-client-ca", Usage: "also require worker client certificates signed by this CA PEM `FILE` (mTLS)", EnvVars: []string{"HISTOR_NATS_TLS_CLIENT_CA"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "npm-registry", Usage: "resolve npm packages' latest versions (and install them, in local workers) from `URL`", EnvVars: []string{"HISTOR_NPM_REGISTRY"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "pypi", Usage: "resolve PyPI packages' latest versions (and install them, in local workers) from the JSON API at `URL`", EnvVars: []string{"HISTOR_PYPI"}}),
		// The local workers observe as `histor sandbox worker` does.
	}, sandboxHostFlags("local workers: ", "DATA/sandbox, which also holds their key")...)
}

// sandboxNodeConfig maps the sandbox flags onto cfg.
func sandboxNodeConfig(c *cli.Context, cfg *node.Config) error {
	if c.Bool("curated") {
		cur, err := registry.DefaultCurated()
		if err != nil {
			return err
		}
		cfg.Crawl.Curated = cur
	}
	s := &cfg.Sandbox
	s.NATS, s.Listen, s.Workers = c.String("nats"), c.String("nats-listen"), c.StringSlice("sandbox-worker-key")
	s.LocalWorkers, s.NPMRegistry, s.PyPI = c.Int("sandbox-workers"), c.String("npm-registry"), c.String("pypi")
	s.Host = sandboxHost(c)
	s.Enabled = c.Bool("sandbox") || s.NATS != "" || len(s.Workers) > 0 || s.LocalWorkers > 0
	tc, verify, err := queueTLS(c.String("nats-tls-cert"), c.String("nats-tls-key"), c.String("nats-tls-client-ca"))
	if err != nil {
		return usageError(err)
	}
	s.TLS, s.TLSVerify = tc, verify
	return nil
}

// queueTLS is the embedded queue's server TLS.
func queueTLS(cert, key, clientCA string) (*tls.Config, bool, error) {
	if cert == "" && key == "" && clientCA == "" {
		return nil, false, nil
	}
	if cert == "" || key == "" {
		return nil, false, errors.New("--nats-tls-cert and --nats-tls-key go together")
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, false, fmt.Errorf("loading the queue's certificate: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if clientCA == "" {
		return tc, false, nil
	}
	pem, err := os.ReadFile(clientCA)
	if err != nil {
		return nil, false, fmt.Errorf("--nats-tls-client-ca: %w", err)
	}
	tc.ClientCAs = x509.NewCertPool()
	if !tc.ClientCAs.AppendCertsFromPEM(pem) {
		return nil, false, fmt.Errorf("--nats-tls-client-ca %s: no PEM certificate", clientCA)
	}
	return tc, true, nil
}
