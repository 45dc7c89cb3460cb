package observer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/histor-observer/histor/sandbox/gvisor"
	"github.com/histor-observer/histor/sandbox/pkgs"
	"github.com/histor-observer/histor/sandbox/trap"
)

// The sandbox's user: nobody, owning nothing on the host but what a run
// hands it.
const sandboxUID = 65534

// caInSandbox is where the trap CA certificate is mounted: over the root's
// own CA bundle, so every TLS client in the sandbox trusts exactly the trap
// CA (nothing else is reachable), and over a file the root has, because a
// mount point runsc had to create would be created in the shared root on
// the host and change its digest.
const caInSandbox = "/etc/ssl/certs/ca-certificates.crt"

// box is one sandboxed stage's surroundings: its own trap network, a HOME
// and a working directory with fresh decoys, a resolv.conf naming the trap,
// and a trace directory.
type box struct {
	name                     string
	home, app, trace, resolv string
	net                      *trap.Network
}

// stages are the stages that run in a box, each on a trap network of its own.
var stages = []string{"scripts", "run"}

// networkID is the trap network id of stage name in the run tagged tag.
func networkID(name, tag string) string { return name[:1] + "-" + tag }

// openBox prepares the surroundings of stage name ("scripts" or "run").
func (r *run) openBox(ctx context.Context, name string) (*box, error) {
	dir := filepath.Join(r.dir, name)
	b := &box{name: name, home: filepath.Join(dir, "home"), app: filepath.Join(dir, "app"),
		trace: filepath.Join(dir, "trace"), resolv: filepath.Join(dir, "resolv.conf")}
	for _, d := range []string{b.home, b.app} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("preparing %s: %w", name, err)
		}
	}
	if _, _, err := trap.PlantDecoys(b.home, b.app, r.tag, sandboxUID, sandboxUID); err != nil {
		return nil, fmt.Errorf("planting decoys: %w", err)
	}
	if err := os.Chown(b.app, sandboxUID, sandboxUID); err != nil {
		return nil, fmt.Errorf("preparing %s: %w", name, err)
	}
	net, err := r.o.pool.Open(ctx, networkID(name, r.tag))
	if err != nil {
		return nil, fmt.Errorf("opening trap network: %w", err)
	}
	b.net = net
	if err := os.WriteFile(b.resolv, net.ResolvConf(), 0o644); err != nil {
		b.close(r)
		return nil, fmt.Errorf("writing resolv.conf: %w", err)
	}
	return b, nil
}

// close removes the box's network; its directories go with the run's.
func (b *box) close(r *run) {
	if b.net == nil {
		return
	}
	if err := b.net.Close(); err != nil {
		r.o.log.Error("closing trap network", "stage", b.name, "err", err)
	}
}

// spec is the gvisor.Run of args in b: the root read-only, the package at
// pkgs.MountPoint (writable only for the install scripts), HOME and the
// working directory writable, resolv.conf and the trap CA read-only, the
// limits, the trap network and the trace.
func (r *run) runSpec(b *box, pkgDir string, pkgWritable bool, args, env []string) gvisor.Run {
	l := r.limits
	return gvisor.Run{
		ID: gvisor.NewID(), Root: r.root.Dir, TmpBytes: l.TmpBytes, Args: args, Env: env, Cwd: trap.WorkInSandbox,
		Mounts: []gvisor.Mount{
			{Source: pkgDir, Destination: pkgs.MountPoint, Writable: pkgWritable},
			{Source: b.home, Destination: trap.HomeInSandbox, Writable: true},
			{Source: b.app, Destination: trap.WorkInSandbox, Writable: true},
			{Source: b.resolv, Destination: "/etc/resolv.conf"},
			{Source: r.o.pool.CAFile(), Destination: caInSandbox},
		},
		UID: sandboxUID, GID: sandboxUID,
		Limits: gvisor.Limits{MemoryBytes: l.MemoryBytes, CPUs: l.CPUs, Pids: int64(l.Pids)},
		NetNS:  b.net.NetnsPath(),
		Trace:  &gvisor.Tracing{Dir: b.trace},
	}
}

// baseEnv is what every sandboxed process gets: a PATH, HOME, production
// mode, the trap CA, and a placeholder for every declared variable.
func (r *run) baseEnv() []string {
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + trap.HomeInSandbox, "NODE_ENV=production", "LANG=C.UTF-8"}
	env = append(env, trap.CAEnv(caInSandbox)...)
	for _, name := range r.opts.Env {
		env = append(env, name+"="+r.env[name])
	}
	return env
}
