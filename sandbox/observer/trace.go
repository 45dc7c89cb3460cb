package observer

import (
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
// HISTOR's decoy and persistence lists for the layout the run mounts.
func readTrace(dir string, windows []window) traced {
	ws := make([]gvisor.Window, len(windows))
	for i, w := range windows {
		ws[i] = gvisor.Window{Name: w.name, From: w.from, To: w.to}
	}
	lists := gvisor.HISTORLists(trap.HomeInSandbox, trap.WorkInSandbox)
	report, err := gvisor.ReadTrace(dir, ws, lists, time.Local)
	return traced{report: report, err: err != nil}
}

// fill copies window i's records and the trace's reasons into p.
func (t traced) fill(i int, p *sandbox.Phase) {
	if t.err || i >= len(t.report.Phases) {
		p.IncompleteReasons = append(p.IncompleteReasons, ReasonTraceUnread)
		return
	}
	t.report.Phases[i].Fill(p, t.report.Reasons)
}
