package observer

import (
	"slices"
	"sync"
	"time"

	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/gvisor"
	"github.com/histor-observer/histor/sandbox/stdio"
	"github.com/histor-observer/histor/sandbox/trap"
)

// The reasons a phase is incomplete that this package adds to the trace's.
const (
	ReasonRecordsDropped = "trap-records-dropped" // the trap network hit its record bound
	ReasonTrapIncomplete = "trap-exchange-incomplete"
	ReasonNotReached     = "phase-not-reached" // the server never answered tools/list
	ReasonAnswerCut      = "tool-answer-truncated"
)

// window is one phase of a sandboxed stage, by wall-clock time.
type window struct {
	name     string
	from, to time.Time
}

// behaviour fills the startup and calls phases of the run from its trace
// and its traps, split at the moment tools/list was answered. Behaviour is
// complete only when both phases and the call coverage are.
func (r *run) behaviour(b *box, res *stdio.Result, started, ended time.Time) {
	split := res.Listed
	if split.IsZero() {
		split = ended
	}
	windows := []window{{"startup", started, split}, {"calls", split, ended}}
	phases := r.phases(b, windows)
	startup, calls := phases[0], phases[1]
	if res.Listed.IsZero() {
		calls.IncompleteReasons = append(calls.IncompleteReasons, ReasonNotReached)
	}
	for _, a := range res.Answers {
		for _, u := range trap.FindCanaries([]byte(a.JSON)) {
			u.Where = "tool " + a.Tool
			calls.Placeholders = append(calls.Placeholders, u)
		}
		if a.Truncated {
			calls.IncompleteReasons = append(calls.IncompleteReasons, ReasonAnswerCut)
		}
	}
	finish(&startup)
	finish(&calls)
	r.obs.Behaviour = sandbox.Behaviour{Observer: BehaviourObserver, Startup: startup, Calls: calls,
		Complete: startup.Complete && calls.Complete && r.obs.Calls.Complete && r.obs.Status == sandbox.StatusOK}
}

// phases builds one Phase per window from the box's trace and trap records.
func (r *run) phases(b *box, windows []window) []sandbox.Phase {
	recs, dropped := b.net.Records()
	traced := readTrace(b.trace, windows, b.net.TrapAddr())
	out := make([]sandbox.Phase, len(windows))
	for i, w := range windows {
		p := emptyPhase()
		p.IncompleteReasons = nil
		traced.fill(i, &p)
		p.Network = dropTrapped(p.Network, recs)
		lookups, attempts, uses := trap.Split(recs, w.from, w.to)
		p.Lookups = append(p.Lookups, lookups...)
		p.Network = append(p.Network, attempts...)
		p.Placeholders = append(p.Placeholders, uses...)
		dnsCanaries(&p, recs, w)
		if dropped {
			p.IncompleteReasons = append(p.IncompleteReasons, ReasonRecordsDropped)
		}
		if trapIncomplete(recs, w) {
			p.IncompleteReasons = append(p.IncompleteReasons, ReasonTrapIncomplete)
		}
		out[i] = p
	}
	return out
}

// dnsCanaries records the lookups whose names carry a canary (exfiltration
// by DNS) also as network attempts, so they read canary=true beside the
// other ways out.
func dnsCanaries(p *sandbox.Phase, recs []trap.Record, w window) {
	for _, rec := range recs {
		if rec.Protocol != "dns" || rec.At.Before(w.from) || !rec.At.Before(w.to) {
			continue
		}
		uses := trap.FindCanaries([]byte(rec.Host))
		if len(uses) == 0 {
			continue
		}
		p.Network = append(p.Network, sandbox.NetworkAttempt{Protocol: "dns", Host: rec.Host, Canary: true})
		for _, u := range uses {
			u.Where = "dns " + rec.Host
			p.Placeholders = append(p.Placeholders, u)
		}
	}
}

// trapIncomplete reports whether a trap could not see a whole exchange in
// w: a command it does not speak, a TLS handshake the client gave up, a
// payload past its bound, or a connection beyond its handlers. A raw
// connection that only went quiet is whole as far as anyone can tell.
func trapIncomplete(recs []trap.Record, w window) bool {
	for _, rec := range recs {
		if rec.At.Before(w.from) || !rec.At.Before(w.to) {
			continue
		}
		switch rec.Incomplete {
		case "", "timeout":
		default:
			return true
		}
	}
	return false
}

// finish bounds a phase's lists, removes repeated placeholder uses and
// decides whether it is complete.
func finish(p *sandbox.Phase) {
	p.Placeholders = distinctUses(p.Placeholders)
	const maxList = 40
	if len(p.Network) > maxList {
		p.Network, p.Truncated = p.Network[:maxList], true
	}
	if len(p.Placeholders) > maxList {
		p.Placeholders, p.Truncated = p.Placeholders[:maxList], true
	}
	if p.Truncated {
		// A list cut at its bound dropped records: never a whole account.
		p.IncompleteReasons = append(p.IncompleteReasons, gvisor.ReasonTruncated)
	}
	slices.Sort(p.IncompleteReasons)
	p.IncompleteReasons = slices.Compact(p.IncompleteReasons)
	p.Complete = len(p.IncompleteReasons) == 0
	if p.Complete {
		p.IncompleteReasons = nil
	}
}

func distinctUses(uses []sandbox.PlaceholderUse) []sandbox.PlaceholderUse {
	seen := map[sandbox.PlaceholderUse]bool{}
	out := []sandbox.PlaceholderUse{}
	for _, u := range uses {
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

// tailBuffer keeps the last bytes a sandboxed process wrote to stderr.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte // guarded by mu
}

const tailKeep = 16 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailKeep {
		t.b = append(t.b[:0], t.b[len(t.b)-tailKeep:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
