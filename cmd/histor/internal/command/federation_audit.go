package command

import (
	"fmt"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/audit"
)

// auditFederationFlags are the audit's federation checks.
func auditFederationFlags() []cli.Flag {
	return []cli.Flag{
		altsrc.NewStringFlag(&cli.StringFlag{Name: "policy", Usage: "also check that /log/checkpoint is signed by a log of the tlog-policy `FILE` " +
			"and cosigned by a quorum of its witnesses", EnvVars: []string{"HISTOR_AUDIT_POLICY"}}),
	}
}

// auditPolicy reads --policy, if given, before anything is fetched.
func auditPolicy(c *cli.Context) (*format.Policy, error) {
	path := c.String("policy")
	if path == "" {
		return nil, nil
	}
	p, err := audit.ReadPolicyFile(path)
	if err != nil {
		return nil, usageError(fmt.Errorf("audit: --policy: %w", err))
	}
	return p, nil
}
