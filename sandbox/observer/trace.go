package observer

import (
	"net/netip"
	"slices"
	"time"

	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/gvisor"
	"github.com/histor-observer/histor/sandbox/trap"
)

// ReasonTraceUnread says the syscall trace could not be read at all.
const ReasonTraceUnread = "trace-unread"

// traced is a stage's syscall trace, per window.
type traced struct {
	report gvisor.TraceReport
	err    bool
}

// readTrace reads the trace runsc wrote into dir, split by windows, with
// HISTOR's decoy and persistence lists for the layout the run mounts and
// the run's trap address as its resolver.
func readTrace(dir string, windows []window, resolver netip.Addr) traced {
	ws := make([]gvisor.Window, len(windows))
	for i, w := range windows {
		ws[i] = gvisor.Window{Name: w.name, From: w.from, To: w.to}
	}
	lists := gvisor.HISTORLists(trap.HomeInSandbox, trap.WorkInSandbox).WithResolver(resolver)
	report, err := gvisor.ReadTrace(dir, ws, lists, time.Local)
	return traced{report: report, err: err != nil}
}

// fill copies window i's records and its reasons into p.
func (t traced) fill(i int, p *sandbox.Phase) {
	if t.err || i >= len(t.report.Phases) {
		p.IncompleteReasons = append(p.IncompleteReasons, ReasonTraceUnread)
		return
	}
	t.report.Phases[i].Fill(p, t.report.Phases[i].Reasons)
}

// dropTrapped removes from attempts (the trace's) the TCP connects a trap
// answered: the trap's record of the same destination says more (what was
// sent, to which name), and one connection is one attempt.
func dropTrapped(attempts []sandbox.NetworkAttempt, recs []trap.Record) []sandbox.NetworkAttempt {
	trapped := map[netip.AddrPort]bool{}
	for _, r := range recs {
		if a, err := netip.ParseAddr(r.Address); err == nil && r.Protocol != "dns" {
			trapped[netip.AddrPortFrom(a, uint16(r.Port))] = true
		}
	}
	return slices.DeleteFunc(attempts, func(a sandbox.NetworkAttempt) bool {
		ip, err := netip.ParseAddr(a.Address)
		return err == nil && a.Protocol == "tcp" && trapped[netip.AddrPortFrom(ip, uint16(a.Port))]
	})
}
