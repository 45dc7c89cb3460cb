package command

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/node"
	"github.com/histor-observer/histor/node/audit"
)

func digestCommand(d deps) *cli.Command {
	return &cli.Command{
		Name:      "digest",
		Usage:     "print the MTL/1 tool-set digest (SRI) of a tools/list result",
		ArgsUsage: "[FILE|-]",
		Description: "Reads a tools/list result ({\"tools\":[…]}, a whole JSON-RPC response or a bare array) from FILE, " +
			"or from standard input when FILE is \"-\" or absent, and prints its sha256-… SRI alone. " +
			"When MTL/1 refuses the set it prints the reason code and a short reason on standard error and exits 1.",
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError(errors.New("digest takes at most one FILE"))
			}
			in := d.stdio.In
			if name := c.Args().First(); name != "" && name != "-" {
				f, err := os.Open(name)
				if err != nil {
					return &exitError{code: 1, err: fmt.Errorf("digest: %w", err)}
				}
				defer f.Close()
				in = f
			}
			return exit(mtl.RunDigest(in, d.stdio.Out, d.stdio.Err))
		},
	}
}

func keygenCommand(d deps) *cli.Command {
	return &cli.Command{
		Name:      "keygen",
		Usage:     "write a new node seed and print the public keys derived from it",
		UsageText: "histor keygen --out FILE [--origin NAME] [--witness-name NAME] [--descriptor FILE [--p2p-listen MULTIADDR]... [--public-url URL]]",
		Description: "Writes 32 random bytes to FILE (mode 0600; an existing file is never replaced) and prints, " +
			"one per line, the log's did:key, the log's signed-note verifier key under --origin, the witness's " +
			"cosignature/v1 verifier key under --witness-name and the gossip host's libp2p peer ID. With --descriptor " +
			"it also writes the signed observer descriptor a node with this seed and these flags writes at start, so " +
			"peers can list it before the node first runs.",
		Flags: []cli.Flag{
			altsrc.NewStringFlag(&cli.StringFlag{Name: "out", Usage: "write the seed to `FILE`; required", EnvVars: []string{"HISTOR_KEYGEN_OUT"}}),
			altsrc.NewStringFlag(&cli.StringFlag{Name: "origin", Value: node.DefaultLogOrigin, Usage: "the log's `NAME` (checkpoint origin), as serve --origin", EnvVars: []string{"HISTOR_ORIGIN"}}),
			altsrc.NewStringFlag(&cli.StringFlag{Name: "witness-name", Usage: "the witness key's `NAME` (default: the origin with /log replaced by /witness)", EnvVars: []string{"HISTOR_WITNESS_NAME"}}),
			altsrc.NewStringFlag(&cli.StringFlag{Name: "descriptor", Usage: "also write the signed observer descriptor to `FILE`", EnvVars: []string{"HISTOR_KEYGEN_DESCRIPTOR"}}),
			altsrc.NewStringSliceFlag(&cli.StringSliceFlag{Name: "p2p-listen", Usage: "the descriptor's gossip `MULTIADDR`, as serve --p2p-listen (repeatable)", EnvVars: []string{"HISTOR_P2P_LISTEN"}}),
			altsrc.NewStringFlag(&cli.StringFlag{Name: "public-url", Usage: "the descriptor's https `URL`, as serve --public-url", EnvVars: []string{"HISTOR_PUBLIC_URL"}}),
		},
		Action: func(c *cli.Context) error {
			out := c.String("out")
			if out == "" {
				return usageError(errors.New("keygen: --out FILE is required"))
			}
			// The names are checked by the rules a node started with this seed will apply.
			cfg := node.Config{DataDir: filepath.Dir(out), SeedFile: out, LogOrigin: c.String("origin"), WitnessName: c.String("witness-name"),
				P2PListen: c.StringSlice("p2p-listen"), PublicURL: c.String("public-url")}
			if err := cfg.Validate(); err != nil {
				return usageError(fmt.Errorf("keygen: %w", err))
			}
			seed, err := keys.Generate(out)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("keygen: %w", err)}
			}
			if err := printKeys(d.stdio.Out, seed, cfg.LogOrigin, cfg.WitnessName); err != nil {
				return err
			}
			if path := c.String("descriptor"); path != "" {
				return writeDescriptor(cfg, path)
			}
			return nil
		},
	}
}

// writeDescriptor writes the descriptor a node of cfg signs at start to path.
func writeDescriptor(cfg node.Config, path string) error {
	cfg.Logger = slog.New(slog.DiscardHandler)
	n, err := node.New(cfg)
	if err == nil {
		_, err = n.WriteDescriptor(path)
	}
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("keygen: %w", err)}
	}
	return nil
}

// printKeys writes the public identity of seed, one labelled line each.
func printKeys(w io.Writer, seed *keys.Seed, origin, witness string) error {
	logPub := seed.LogKey().Public().(ed25519.PublicKey)
	did := awr.DIDKey(logPub)
	logVkey, err := keys.NoteVerifierKey(origin, logPub)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("keygen: %w", err)}
	}
	witVkey, err := keys.CosignatureVerifierKey(witness, seed.WitnessKey().Public().(ed25519.PublicKey))
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("keygen: %w", err)}
	}
	peerID := format.PeerIDFromKey(seed.P2PKey().Public().(ed25519.PublicKey))
	_, err = fmt.Fprintf(w, "did: %s\nlog-vkey: %s\nwitness-vkey: %s\npeer-id: %s\n", did, logVkey, witVkey, peerID)
	return err
}

func labelCommand(d deps) *cli.Command {
	return &cli.Command{
		Name:  "label",
		Usage: "work with AWR/2 labels",
		Subcommands: []*cli.Command{{
			Name:      "verify",
			Usage:     "verify signed AWR/2 label documents",
			ArgsUsage: "FILE...",
			Description: "Checks each FILE's eddsa-jcs-2022 Data Integrity proof against its issuer's did:key and the " +
				"AWR/2 label shape; exits 0 only if every document verifies.",
			Action: func(c *cli.Context) error {
				if c.NArg() == 0 {
					return usageError(errors.New("label verify: name at least one FILE"))
				}
				return exit(awr.RunVerify(c.Args().Slice(), d.stdio.Out, d.stdio.Err))
			},
		}},
	}
}

func auditCommand(d deps) *cli.Command {
	return &cli.Command{
		Name:      "audit",
		Usage:     "audit a HISTOR log from the outside, trusting only its did:key",
		ArgsUsage: "BASE",
		UsageText: "histor audit BASE [--state FILE] [--label ID] [--tiles [--tiles-max-leaves N]] [--timeout DURATION] [--deadline DURATION]",
		Description: "Verifies the latest signed tree head of the log at BASE against its did:key, proves it consistent " +
			"with the head kept in --state by the previous run (refusing a shrink, a rewrite or a changed key), " +
			"optionally checks one label's validity and inclusion and reads the whole tree through /log/, then keeps " +
			"the new head. Exit status: 0 every check passed, 1 the log misbehaved, 2 the audit could not be completed.",
		Flags: append([]cli.Flag{
			altsrc.NewStringFlag(&cli.StringFlag{Name: "state", Usage: "keep the last verified head in `FILE` (pins the log's key on first run)", EnvVars: []string{"HISTOR_AUDIT_STATE"}}),
			altsrc.NewStringFlag(&cli.StringFlag{Name: "label", Usage: "also check label `ID` (urn:uuid:…): valid, issued by this log, included under the head", EnvVars: []string{"HISTOR_AUDIT_LABEL"}}),
			altsrc.NewBoolFlag(&cli.BoolFlag{Name: "tiles", Usage: "also read every entry and hash tile under /log/ and check them against the checkpoint", EnvVars: []string{"HISTOR_AUDIT_TILES"}}),
			altsrc.NewInt64Flag(&cli.Int64Flag{Name: "tiles-max-leaves", Value: audit.DefaultMaxTilesLeaves, Usage: "with --tiles, refuse (exit 2) a checkpoint of more than `N` leaves", EnvVars: []string{"HISTOR_AUDIT_TILES_MAX_LEAVES"}}),
			altsrc.NewDurationFlag(&cli.DurationFlag{Name: "timeout", Value: audit.DefaultTimeout, Usage: "`DURATION` allowed for each request", EnvVars: []string{"HISTOR_AUDIT_TIMEOUT"}}),
			altsrc.NewDurationFlag(&cli.DurationFlag{Name: "deadline", Value: audit.DefaultDeadline, Usage: "`DURATION` allowed for the whole audit (exit 2 when it expires)", EnvVars: []string{"HISTOR_AUDIT_DEADLINE"}}),
		}, auditFederationFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError(errors.New("audit: name exactly one BASE URL"))
			}
			if err := checkAuditFlags(c); err != nil {
				return err
			}
			log, err := logger(c, d.stdio.Err)
			if err != nil {
				return err
			}
			policy, err := auditPolicy(c)
			if err != nil {
				return err
			}
			rep, err := audit.Run(c.Context, audit.Options{
				Base: c.Args().First(), StatePath: c.String("state"), LabelID: c.String("label"),
				Tiles: c.Bool("tiles"), MaxTilesLeaves: uint64(c.Int64("tiles-max-leaves")),
				Timeout: c.Duration("timeout"), Deadline: c.Duration("deadline"), Logger: log,
				Federation: true, Policy: policy,
			})
			return auditResult(d.stdio, rep, err)
		},
	}
}

// checkAuditFlags refuses bounds that audit.Options would read as "the default" (zero) or that
// net/http would read as "none" (a negative timeout).
func checkAuditFlags(c *cli.Context) error {
	for _, name := range []string{"timeout", "deadline"} {
		if c.Duration(name) <= 0 {
			return usageError(fmt.Errorf("audit: --%s must be positive", name))
		}
	}
	if c.Int64("tiles-max-leaves") < 1 {
		return usageError(errors.New("audit: --tiles-max-leaves must be at least 1"))
	}
	return nil
}

// auditResult prints the report (stdout) or what failed (stderr), as HISTOR's auditor does.
func auditResult(stdio Stdio, rep *audit.Report, err error) error {
	if err != nil {
		word := "AUDIT INCOMPLETE"
		if audit.ExitCode(err) == 1 {
			word = "AUDIT FAILED"
		}
		fmt.Fprintf(stdio.Err, "%s: %v\n", word, err)
		return exit(audit.ExitCode(err))
	}
	out, err := canon.MarshalPlainIndent(rep, "  ")
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("audit: printing the report: %w", err)}
	}
	stdio.Out.Write(out)
	return nil
}

func logCommand(d deps) *cli.Command {
	return &cli.Command{
		Name:  "log",
		Usage: "maintain a node's log",
		Subcommands: []*cli.Command{{
			Name:      "fsck",
			Usage:     "re-derive every tile and head from the stored leaves and report any disagreement",
			UsageText: "histor log fsck --data DIR",
			Description: "Reads the log in DIR (the node must not be running) and prints each problem found. " +
				"Exit status: 0 no problem, 1 a problem was found, 2 the check could not run.",
			Flags: []cli.Flag{
				altsrc.NewStringFlag(&cli.StringFlag{Name: "data", Usage: "the node's data `DIR`, as serve --data; required", EnvVars: []string{"HISTOR_DATA"}}),
			},
			Action: func(c *cli.Context) error { return fsck(c, d) },
		}},
	}
}

func fsck(c *cli.Context, d deps) error {
	dir := c.String("data")
	if dir == "" {
		return usageError(errors.New("log fsck: --data DIR is required"))
	}
	log, err := logger(c, d.stdio.Err)
	if err != nil {
		return err
	}
	rep, err := hlog.Fsck(c.Context, filepath.Join(dir, "log"), log)
	var bad *hlog.CorruptError
	if errors.As(err, &bad) {
		// Damage too deep to walk the tree is still a finding about the data, not a failure to look.
		fmt.Fprintf(d.stdio.Out, "problem: %v\n", bad)
		return exit(1)
	}
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("log fsck: %w", err)}
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(d.stdio.Out, "problem: %s\n", p)
	}
	fmt.Fprintf(d.stdio.Out, "size %d, %d heads, %d problems\n", rep.Size, rep.Heads, len(rep.Problems))
	if len(rep.Problems) > 0 {
		return exit(1)
	}
	return nil
}
