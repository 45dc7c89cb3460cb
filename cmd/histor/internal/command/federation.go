package command

import (
	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/histor-observer/histor/node"
)

// federationFlags are node.Config's federation fields; node.Config documents each. A list
// flag is repeatable; its environment variable and config-file key take several values (a
// comma-separated list, a TOML array).
func federationFlags() []cli.Flag {
	return []cli.Flag{
		altsrc.NewStringSliceFlag(&cli.StringSliceFlag{Name: "p2p-listen", Usage: "run the gossip host, listening on `MULTIADDR` " +
			"(/ip4/0.0.0.0/tcp/4001, /ip4/0.0.0.0/udp/4001/quic-v1; repeatable); none runs no gossip", EnvVars: []string{"HISTOR_P2P_LISTEN"}}),
		altsrc.NewStringSliceFlag(&cli.StringSliceFlag{Name: "peer", Usage: "federation peer: the `PATH` of its signed observer descriptor, " +
			"or did:key:…=<multiaddr ending in /p2p/<peer ID>> (repeatable)", EnvVars: []string{"HISTOR_PEERS"}}),
		altsrc.NewStringSliceFlag(&cli.StringSliceFlag{Name: "allow-observer", Usage: "also count heads, observations and evidence of the observer `DID` " +
			"(did:key:…; repeatable); peers are always counted", EnvVars: []string{"HISTOR_ALLOW_OBSERVERS"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "members", Usage: "read further members from `FILE`, one per line (a descriptor path, " +
			"did:key:…=<multiaddr>, or a did:key alone to allow); SIGHUP reads it again without a restart", EnvVars: []string{"HISTOR_MEMBERS"}}),
		altsrc.NewStringSliceFlag(&cli.StringSliceFlag{Name: "witness-log", Usage: "also witness (cosign) the log `ORIGIN=VKEY` " +
			"(its checkpoint origin and signed-note verifier key; repeatable)", EnvVars: []string{"HISTOR_WITNESS_LOGS"}}),
		altsrc.NewStringSliceFlag(&cli.StringSliceFlag{Name: "witness", Usage: "submit every checkpoint to the witness `URL=VKEY` " +
			"(its submission prefix and cosignature/v1 verifier key; repeatable)", EnvVars: []string{"HISTOR_WITNESSES"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "witness-policy", Usage: "tlog-policy `FILE` saying when a checkpoint counts as witnessed " +
			"(default: any one of the witnesses submitted to)", EnvVars: []string{"HISTOR_WITNESS_POLICY"}}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "mirror-poll", Value: node.DefaultMirrorPoll, Usage: "ask every counted observer, and the peers " +
			"that mirror it, for a newer checkpoint this often, beside gossip's announcements", EnvVars: []string{"HISTOR_MIRROR_POLL"}}),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "mirror-urls", Usage: "also read each descriptor peer's log from the https URL its descriptor names",
			EnvVars: []string{"HISTOR_MIRROR_URLS"}}),
	}
}

// federationConfig maps the federation flags onto cfg.
func federationConfig(c *cli.Context, cfg *node.Config) {
	cfg.P2PListen = c.StringSlice("p2p-listen")
	cfg.Peers = c.StringSlice("peer")
	cfg.AllowList = c.StringSlice("allow-observer")
	cfg.MembersFile = c.String("members")
	cfg.WitnessLogs = c.StringSlice("witness-log")
	cfg.Witnesses = c.StringSlice("witness")
	cfg.WitnessPolicy = c.String("witness-policy")
	cfg.MirrorPoll = c.Duration("mirror-poll")
	cfg.MirrorURLs = c.Bool("mirror-urls")
}
