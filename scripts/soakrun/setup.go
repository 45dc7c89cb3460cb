package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// planNodes lays out the nodes under dir: data directories, ports, origins.
func planNodes(dir string, count int) ([]*nodeProc, error) {
	var nodes []*nodeProc
	for n := 1; n <= count; n++ {
		httpPort, err := freePort()
		if err != nil {
			return nil, err
		}
		p2pPort, err := freePort()
		if err != nil {
			return nil, err
		}
		nd := filepath.Join(dir, fmt.Sprintf("node-%d", n))
		nodes = append(nodes, &nodeProc{n: n, dir: nd, data: filepath.Join(nd, "data"),
			desc: filepath.Join(dir, "descriptors", fmt.Sprintf("node-%d.descriptor", n)), members: filepath.Join(nd, "members"),
			logPath: filepath.Join(nd, "node.log"), origin: fmt.Sprintf("node-%d.soak.histor.local/log", n),
			httpAddr: fmt.Sprintf("127.0.0.1:%d", httpPort), p2pPort: p2pPort})
	}
	for _, d := range []string{filepath.Join(dir, "descriptors"), filepath.Join(dir, "audit")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("making %s: %w", filepath.Base(d), err)
		}
	}
	return nodes, nil
}

// keygen makes node p's seed in its data directory and writes its signed descriptor
// (with the listen addresses and public URL it will serve with) before its first start.
func keygen(ctx context.Context, bin string, p *nodeProc) error {
	if err := os.MkdirAll(p.data, 0o700); err != nil {
		return fmt.Errorf("making node %d's data directory: %w", p.n, err)
	}
	args := []string{"keygen", "--out", filepath.Join(p.data, "seed"), "--origin", p.origin,
		"--descriptor", p.desc, "--public-url", p.base()}
	for _, a := range p.p2pAddrs() {
		args = append(args, "--p2p-listen", a)
	}
	out, err := runHistor(ctx, bin, time.Minute, args...)
	if err != nil {
		return fmt.Errorf("histor keygen for node %d: %w: %s", p.n, err, out)
	}
	p.did = keygenDID(out)
	if p.did == "" {
		return fmt.Errorf("histor keygen for node %d printed no did: %s", p.n, out)
	}
	return nil
}

// keygenDID reads the "did: did:key:…" line keygen prints.
func keygenDID(out []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "did: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// writeMembers gives each node a members file naming the other nodes' descriptors.
func writeMembers(nodes []*nodeProc) error {
	for _, p := range nodes {
		var b strings.Builder
		b.WriteString("# the soak's other observers\n")
		for _, q := range nodes {
			if q != p {
				b.WriteString(q.desc + "\n")
			}
		}
		if err := os.WriteFile(p.members, []byte(b.String()), 0o600); err != nil {
			return fmt.Errorf("writing node %d's members file: %w", p.n, err)
		}
	}
	return nil
}

// runHistor runs one histor command to its end (at most limit) and returns its output.
func runHistor(ctx context.Context, bin string, limit time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = cleanEnv()
	return cmd.CombinedOutput()
}

// exitCode is the exit status of a command's error: 0 for none, -1 when it did not exit.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
