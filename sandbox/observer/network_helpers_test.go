package observer

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/rootfs"
	"github.com/histor-observer/histor/sandbox/stdio"
	"github.com/histor-observer/histor/sandbox/trap"
)

// hostListeners listens on the host, in the root network namespace, on
// every address it has (loopback and each other one, link-local ones
// aside) at each port, or at a free port when ports is empty, and counts
// what connects. A port already taken on an address is logged and left
// out: something of the host's listens there.
type hostListeners struct {
	mu    sync.Mutex
	addrs []netip.AddrPort // where it listens
	hits  map[netip.AddrPort]int
}

func listenOnHost(t *testing.T, ports ...int) *hostListeners {
	t.Helper()
	h := &hostListeners{hits: map[netip.AddrPort]int{}}
	if len(ports) == 0 {
		ports = []int{0}
	}
	for _, a := range hostAddrs(t) {
		for _, port := range ports {
			l, err := net.Listen("tcp", netip.AddrPortFrom(a, uint16(port)).String())
			if err != nil {
				t.Logf("not listening on %s port %d: %v", a, port, err)
				continue
			}
			t.Cleanup(func() { l.Close() })
			ap := l.Addr().(*net.TCPAddr).AddrPort()
			h.addrs = append(h.addrs, ap)
			go h.accept(l, ap)
		}
	}
	if len(h.addrs) == 0 {
		t.Fatal("no host listener started")
	}
	return h
}

func (h *hostListeners) accept(l net.Listener, ap netip.AddrPort) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		h.mu.Lock()
		h.hits[ap]++
		h.mu.Unlock()
		c.Close()
	}
}

// assertNothing fails t for every connection any listener accepted.
func (h *hostListeners) assertNothing(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for ap, n := range h.hits {
		t.Errorf("the host's listener on %s accepted %d connections", ap, n)
	}
	t.Logf("%d host listeners received nothing: %v", len(h.addrs), h.addrs)
}

// hostAddrs are the root network namespace's addresses: loopback and each
// other address, without link-local ones (they need a zone to dial).
func hostAddrs(t *testing.T) []netip.Addr {
	t.Helper()
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []netip.Addr
	for _, ia := range ifaddrs {
		p, err := netip.ParsePrefix(ia.String())
		if err != nil || p.Addr().IsLinkLocalUnicast() {
			continue
		}
		out = append(out, p.Addr())
	}
	return out
}

// scriptRun is what one node script did in a sandbox of its own: a run
// box (trap network, decoys, trace) like an observation's run stage.
type scriptRun struct {
	out   string
	exit  string
	phase sandbox.Phase
	recs  []trap.Record
}

// runNodeScript runs node -e script in the node root, in a box as the run
// stage builds it, and reads the trace and the traps as one phase.
func runNodeScript(t *testing.T, o *Observer, script string) scriptRun {
	t.Helper()
	r := &run{o: o, tag: newTag(), dir: t.TempDir(), root: o.roots[rootfs.Node]}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := r.openBox(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	defer b.close(r)
	pkg := filepath.Join(r.dir, "pkg")
	if err := os.Mkdir(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := r.runSpec(b, pkg, false, []string{"/usr/bin/node", "-e", script}, r.baseEnv())
	var out bytes.Buffer
	spec.Stdout, spec.Stderr, spec.Stdin = &out, &out, emptyReader{}
	started := time.Now()
	sb, err := o.runtime.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	exit := sb.Wait()
	b.close(r)
	ph := r.phases(b, []window{{"script", started, time.Now()}})[0]
	finish(&ph)
	recs, _ := b.net.Records()
	return scriptRun{out: out.String(), exit: exit.String(), phase: ph, recs: recs}
}

// answers collects the session results of o's runs.
func answers(o *Observer) func() []stdio.Answer {
	var mu sync.Mutex
	var all []stdio.Answer
	o.talkHook = func(res *stdio.Result) {
		mu.Lock()
		defer mu.Unlock()
		all = append(all, res.Answers...)
	}
	return func() []stdio.Answer {
		mu.Lock()
		defer mu.Unlock()
		return all
	}
}

// answerNumber is the number the first submatch of re finds in tool's
// answer, or -1.
func answerNumber(list []stdio.Answer, tool string, re *regexp.Regexp) (int64, string) {
	for _, a := range list {
		if a.Tool != tool {
			continue
		}
		if m := re.FindStringSubmatch(a.Text); m != nil {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			return n, a.Text
		}
		return -1, a.Text
	}
	return -1, ""
}
