package demo

import (
	"fmt"
	"io"
)

// guide tells a newcomer what is running, which URL to open and what to look for.
func guide(out io.Writer, cfg Config, obs []observer, fx *fixture) {
	p := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	p("histor demo: %d observers on loopback, each crawling a local registry every %s. Nothing leaves this machine;", len(obs), cfg.Interval)
	p("their crawlers may dial loopback addresses, which a real observer never does.")
	p("")
	for _, o := range obs {
		p("  observer %d  http://%s   libp2p %s, %s   dials from %s", o.n, o.httpAddr, o.tcpAddr(), o.quicAddr(), o.localAddr)
		p("              %s   data %s", o.ids.did, o.dir)
	}
	p("")
	p("  registry    %s/v0.1/servers", fx.registryURL)
	for _, s := range fx.servers {
		p("  %-26s %s  %s", s.name, s.endpoint, s.what)
	}
	first, last := obs[0], obs[len(obs)-1]
	changing, twoFaced := fx.servers[1], fx.servers[2]
	p("")
	p("What to look at:")
	p("  1. Open http://%s/api/v1/servers: the three servers, as observer 1 saw them.", first.httpAddr)
	p("  2. After the second crawl (about %s), http://%s/api/v1/changes lists a change of %s:", 2*cfg.Interval, first.httpAddr, changing.name)
	p("     one sentence was added to a tool description. Every observer records it (ports %d to %d).", cfg.HTTPBase, cfg.HTTPBase+len(obs)-1)
	p("  3. Compare http://%s/api/v1/servers/%s", first.httpAddr, twoFaced.id())
	p("     with    http://%s/api/v1/servers/%s", last.httpAddr, twoFaced.id())
	p("     %s showed observer %d another tool set: its tool-set digest differs there.", twoFaced.name, twoFacedOdd+1)
	p("     With gossip on, every observer's /api/v1/servers?state=split lists it, and /api/v1/check")
	p("     answers with what each observer saw (observers[], agreement).")
	p("  4. Each log is a C2SP tlog: http://%s/log/checkpoint.", first.httpAddr)
	p("")
	p("Ctrl-C stops all three.")
}
