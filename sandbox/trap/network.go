package trap

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"time"
)

// Interface names inside the two namespaces, and the port every redirected
// TCP connection lands on in the trap namespace.
const (
	sandboxIface = "eth0"
	trapIface    = "trap0"
	trapPort     = 18000
)

// setupTimeout bounds each external command of Open and Close.
const setupTimeout = 30 * time.Second

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// Network is one run's network: a sandbox namespace whose only peer is a
// trap namespace serving the traps. Close removes it all.
type Network struct {
	pool        *Pool
	id          string
	slot        int
	trapAddr    netip.Addr
	sandboxAddr netip.Addr
	sandboxNS   string // namespace names
	trapNS      string

	tcp   *net.TCPListener
	udp   *net.UDPConn
	store *store
	slots chan struct{} // one token per running TCP handler
	peak  atomic.Int32  // most handlers seen at once
	busy  atomic.Int32  // handlers running now

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // open trap connections, guarded by mu
	closed bool                  // guarded by mu
	wg     sync.WaitGroup        // serving goroutines

	created   bool // the namespaces are ours to delete: set before creating them, never when they already existed
	closeOnce sync.Once
	closeErr  error
}

// Open builds the network for run id ([a-z0-9-], at most 40 characters,
// unique among open networks) and starts its traps.
func (p *Pool) Open(ctx context.Context, id string) (*Network, error) {
	if !idPattern.MatchString(id) {
		return nil, fmt.Errorf("opening trap network: bad run id %q", id)
	}
	slot, err := p.take(id)
	if err != nil {
		return nil, fmt.Errorf("opening trap network %s: %w", id, err)
	}
	trapAddr, sandboxAddr := p.addrs(slot)
	n := &Network{
		pool: p, id: id, slot: slot, trapAddr: trapAddr, sandboxAddr: sandboxAddr,
		sandboxNS: SandboxPrefix + id, trapNS: TrapPrefix + id,
		store: newStore(p.cfg.MaxRecords, trapAddr),
		slots: make(chan struct{}, p.cfg.Handlers),
		conns: map[net.Conn]struct{}{},
	}
	start := time.Now()
	if err := n.setup(ctx); err != nil {
		n.Close()
		return nil, fmt.Errorf("opening trap network %s: %w", id, err)
	}
	p.log.Debug("trap network up", "id", id, "trap", trapAddr, "sandbox", sandboxAddr, "took", time.Since(start))
	return n, nil
}

// NetnsPath is the sandbox namespace, for the runtime's network namespace.
func (n *Network) NetnsPath() string { return filepath.Join(netnsDir, n.sandboxNS) }

// TrapAddr is the sandbox's only peer: its gateway and its resolver.
func (n *Network) TrapAddr() netip.Addr { return n.trapAddr }

// SandboxAddr is the sandbox side's address.
func (n *Network) SandboxAddr() netip.Addr { return n.sandboxAddr }

// ResolvConf is the resolv.conf the sandbox should see.
func (n *Network) ResolvConf() []byte {
	return []byte("nameserver " + n.trapAddr.String() + "\noptions attempts:1 timeout:2\n")
}

func (n *Network) setup(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	steps := []struct {
		what string
		do   func(context.Context) error
	}{
		{"creating namespaces", n.createNamespaces},
		{"setting sysctls", n.setSysctls},
		{"addressing", n.address},
		{"installing redirects", n.installRedirects},
		{"starting traps", n.startTraps},
	}
	for _, s := range steps {
		if err := s.do(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return nil
}

// createNamespaces makes both namespaces and the veth pair, one end in
// each, in one ip process: the pair never exists in the root namespace.
func (n *Network) createNamespaces(ctx context.Context) error {
	for _, ns := range []string{n.sandboxNS, n.trapNS} {
		if _, err := os.Stat(filepath.Join(netnsDir, ns)); err == nil {
			return fmt.Errorf("namespace %s already exists", ns)
		}
	}
	n.created = true
	batch := fmt.Sprintf("netns add %s\nnetns add %s\nlink add %s netns %s type veth peer name %s netns %s\n",
		n.sandboxNS, n.trapNS, sandboxIface, n.sandboxNS, trapIface, n.trapNS)
	return run(ctx, batch, "ip", "-batch", "-")
}

// setSysctls turns forwarding and IPv6 off on both sides before any link
// is up, so no IPv6 link-local address ever appears.
func (n *Network) setSysctls(context.Context) error {
	values := []sysctl{
		{"net/ipv4/ip_forward", "0", false},
		{"net/ipv6/conf/all/disable_ipv6", "1", true},
		{"net/ipv6/conf/default/disable_ipv6", "1", true},
		{"net/ipv6/conf/all/forwarding", "0", true},
	}
	for _, ns := range []string{n.sandboxNS, n.trapNS} {
		if err := writeSysctls(filepath.Join(netnsDir, ns), values); err != nil {
			return fmt.Errorf("in %s: %w", ns, err)
		}
	}
	return nil
}

// address gives each side its half of the /30. Only the sandbox side has a
// route beyond its link, and it points at the trap; the trap side has none.
func (n *Network) address(ctx context.Context) error {
	sbx := fmt.Sprintf("addr add %s/30 dev %s\nlink set lo up\nlink set %s up\nroute add default via %s\n",
		n.sandboxAddr, sandboxIface, sandboxIface, n.trapAddr)
	if err := run(ctx, sbx, "ip", "-n", n.sandboxNS, "-batch", "-"); err != nil {
		return err
	}
	trp := fmt.Sprintf("addr add %s/30 dev %s\nlink set lo up\nlink set %s up\n", n.trapAddr, trapIface, trapIface)
	return run(ctx, trp, "ip", "-n", n.trapNS, "-batch", "-")
}

// installRedirects sends every TCP connection arriving from the sandbox,
// whatever its destination, to the trap listener, and UDP 53 to the DNS
// trap. FORWARD drops everything as a second wall behind ip_forward=0.
func (n *Network) installRedirects(ctx context.Context) error {
	rules := fmt.Sprintf(`*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
-A PREROUTING -i %[1]s -p tcp -j REDIRECT --to-ports %[2]d
-A PREROUTING -i %[1]s -p udp --dport 53 -j REDIRECT --to-ports 53
COMMIT
*filter
:INPUT ACCEPT [0:0]
:FORWARD DROP [0:0]
:OUTPUT ACCEPT [0:0]
COMMIT
`, trapIface, trapPort)
	return run(ctx, rules, "nsenter", "--net="+filepath.Join(netnsDir, n.trapNS), "iptables-restore")
}

// startTraps creates the listening sockets inside the trap namespace and
// serves them from ordinary goroutines.
func (n *Network) startTraps(context.Context) error {
	err := inNetns(filepath.Join(netnsDir, n.trapNS), func() error {
		tcp, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: n.trapAddr.AsSlice(), Port: trapPort})
		if err != nil {
			return fmt.Errorf("listening on tcp: %w", err)
		}
		udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: n.trapAddr.AsSlice(), Port: 53})
		if err != nil {
			tcp.Close()
			return fmt.Errorf("listening on udp 53: %w", err)
		}
		n.tcp, n.udp = tcp, udp
		return nil
	})
	if err != nil {
		return err
	}
	n.wg.Add(2)
	go func() { defer n.wg.Done(); n.serveTCP() }()
	go func() { defer n.wg.Done(); n.serveDNS() }()
	return nil
}

// Close stops the traps and deletes both namespaces (and with them the veth
// pair and the iptables rules, which live only there). It is idempotent;
// later calls return the first call's result.
func (n *Network) Close() error {
	n.closeOnce.Do(func() { n.closeErr = n.teardown() })
	return n.closeErr
}

func (n *Network) teardown() error {
	n.mu.Lock()
	n.closed = true
	for c := range n.conns {
		c.Close()
	}
	n.mu.Unlock()
	if n.tcp != nil {
		n.tcp.Close()
	}
	if n.udp != nil {
		n.udp.Close()
	}
	n.wg.Wait()
	if !n.created {
		n.pool.give(n.slot, n.id)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	err := errors.Join(deleteNetns(ctx, n.sandboxNS), deleteNetns(ctx, n.trapNS))
	if err != nil {
		// Keep the slot: its addresses may still be on a half-deleted link.
		return fmt.Errorf("closing trap network %s: %w", n.id, err)
	}
	n.pool.give(n.slot, n.id)
	return nil
}

// track registers an open connection so Close can end it; false when the
// network is closing.
func (n *Network) track(c net.Conn) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false
	}
	n.conns[c] = struct{}{}
	return true
}

func (n *Network) untrack(c net.Conn) {
	n.mu.Lock()
	delete(n.conns, c)
	n.mu.Unlock()
}
