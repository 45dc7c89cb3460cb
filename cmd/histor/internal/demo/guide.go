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
		p("              %s   data %s", o.did, o.dir)
	}
	p("")
	p("  registry    %s/v0.1/servers", fx.registryURL)
	for _, s := range fx.servers {
		p("  %-26s %s  %s", s.name, s.endpoint, s.what)
	}
	first, last := obs[0], obs[len(obs)-1]
	changing, twoFaced := fx.servers[1], fx.servers[2]
	p("")
	p("What to look at (start with observer 1, http://%s):", first.httpAddr)
	p("  1. http://%s/api/v1/servers?state=split lists %s within a few seconds:", first.httpAddr, twoFaced.name)
	p("     it showed observer %d another tool set than observers 1 and 2. The observers gossip what they saw,", twoFacedOdd+1)
	p("     each observation proven included in its observer's log, so every observer holds the split.")
	p("  2. http://%s/api/v1/servers/%s: \"observers\" has what each observer saw", first.httpAddr, twoFaced.id())
	p("     (digest, label, leaf, head), and \"agreement\" says \"split\" with the counts; compare")
	p("     http://%s/api/v1/servers/%s, the one it showed the other set to.", last.httpAddr, twoFaced.id())
	p("  3. After the second crawl (about %s), http://%s/api/v1/changes lists a change of %s:", 2*cfg.Interval, first.httpAddr, changing.name)
	p("     one sentence was added to a tool description. Every observer records it (ports %d to %d).", cfg.HTTPBase, cfg.HTTPBase+len(obs)-1)
	p("  4. http://%s/log/checkpoint is observer 1's log head as a C2SP checkpoint, with a", first.httpAddr)
	p("     cosignature line from each of the other two observers' witnesses.")
	p("  5. POST a tool set to http://%s/api/v1/check: the signed answer carries observers[] and agreement.", first.httpAddr)
	p("")
	p("Ctrl-C stops all three.")
}
