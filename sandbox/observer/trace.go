package observer

import "github.com/histor-observer/histor/sandbox"

// ReasonTraceUnread says the syscall trace was written but not read: the
// runner's trace parser is not in this build.
const ReasonTraceUnread = "trace-unread"

// traced is a stage's syscall trace, per window.
type traced struct{ reasons []string }

// readTrace reads the trace runsc wrote into dir, split by windows.
func readTrace(dir string, windows []window) traced {
	return traced{reasons: []string{ReasonTraceUnread}}
}

// fill copies window i's records into p.
func (t traced) fill(i int, p *sandbox.Phase) {
	p.IncompleteReasons = append(p.IncompleteReasons, t.reasons...)
}
