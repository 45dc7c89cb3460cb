package observer

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/gvisor"
	"github.com/histor-observer/histor/sandbox/trap"
)

// probeScript connects to every target (address:port) and prints, as JSON,
// what became of each: "connected" or node's error code.
const probeScript = `
const net = require('net');
const targets = %s;
const results = {};
let left = targets.length;
for (const t of targets) {
  const i = t.lastIndexOf(':');
  const s = net.connect({ host: t.slice(0, i).replace(/^\[|\]$/g, ''), port: +t.slice(i + 1), timeout: 3000 });
  s.on('connect', () => { results[t] = 'connected'; s.end('histor-probe\n'); });
  s.on('timeout', () => { results[t] = results[t] || 'timeout'; s.destroy(); });
  s.on('error', e => { results[t] = results[t] || e.code; });
  s.on('close', () => { if (--left === 0) console.log(JSON.stringify(results)); });
}
`

// TestSandboxNetworkFromOutside checks the sandbox's network from both
// sides: a node script in the root image connects to the host's own
// addresses (loopback and every other address of the root namespace, each
// with a listener on it) and to addresses that are no trap. Every
// connection fails or lands in the trap (the trap recorded that
// destination), each one is recorded, no host listener ever sees one, and
// with every destination shown the phase is complete. A quiet script's
// phase is complete and empty; one datagram sent to a destination this
// runsc does not print leaves its phase incomplete.
func TestSandboxNetworkFromOutside(t *testing.T) {
	if testing.Short() {
		t.Skip("runs node scripts in gVisor; skipped under -short")
	}
	o := newTestObserver(t, Config{})
	host := listenOnHost(t)
	targets := []string{"198.51.100.9:8080", "10.0.2.2:22", "192.0.2.1:8443"}
	for _, ap := range host.addrs {
		targets = append(targets, ap.String())
	}
	data, _ := json.Marshal(targets)
	probe := runNodeScript(t, o, fmt.Sprintf(probeScript, data))
	t.Logf("probe: %s (%s); phase %+v", strings.TrimSpace(probe.out), probe.exit, probe.phase)
	var results map[string]string
	if err := json.Unmarshal([]byte(strings.TrimSpace(probe.out)), &results); err != nil || len(results) != len(targets) {
		t.Fatalf("probe output %q: %v", probe.out, err)
	}
	for _, target := range targets {
		ap := netip.MustParseAddrPort(target)
		trapped := slices.ContainsFunc(probe.recs, func(r trap.Record) bool { return r.Address == ap.Addr().String() && r.Port == int(ap.Port()) })
		switch got := results[target]; {
		case got == "connected" && !trapped:
			t.Errorf("%s: connected, and no trap recorded it", target)
		case got != "connected" && got == "":
			t.Errorf("%s: no result", target)
		}
		recorded := slices.ContainsFunc(probe.phase.Network, func(a sandbox.NetworkAttempt) bool {
			return a.Address == ap.Addr().String() && a.Port == int(ap.Port())
		})
		if !recorded && !ap.Addr().IsLoopback() { // HISTOR counts no connection to loopback
			t.Errorf("%s (%s): not among the attempts %+v", target, results[target], probe.phase.Network)
		}
	}
	if !probe.phase.Complete {
		t.Errorf("every destination shown, yet incomplete: %q", probe.phase.IncompleteReasons)
	}
	host.assertNothing(t)

	quiet := runNodeScript(t, o, `console.log("quiet")`)
	if p := quiet.phase; !p.Complete || len(p.Network) > 0 || len(p.Decoys) > 0 || len(p.Writes) > 0 || len(p.Exec) > 0 {
		t.Errorf("quiet script (%s, %q): phase %+v, want complete and empty", quiet.exit, quiet.out, p)
	}
	udp := runNodeScript(t, o, `const s = require('dgram').createSocket('udp4'); s.send('x', 9999, '198.51.100.9', () => s.close());`)
	if p := udp.phase; p.Complete || !slices.Contains(p.IncompleteReasons, gvisor.ReasonUnresolvedSocket) {
		t.Errorf("datagram to an unprinted destination (%s, %q): phase %+v, want incomplete", udp.exit, udp.out, p)
	}
}
