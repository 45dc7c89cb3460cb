package crawl

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/histor-observer/histor/crawl/state"
)

// Summary is what one crawl did. Every harvested target is counted under
// exactly one status, so Targets is the sum of ByStatus.
type Summary struct {
	Started time.Time
	Targets int
	// Servers counts the distinct server names among Targets.
	Servers  int
	ByStatus map[string]int
	// Labels counts labels appended, in all; ByMethod by method URN.
	Labels   int
	ByMethod map[string]int
	Changes  int
	Duration time.Duration
	// Complete is true when the registry harvest read every page.
	Complete bool
	// Errors counts targets our side failed to process (never the server's doing).
	Errors int
	// Changed lists, in commit order, the targets this crawl gave a new label or a status
	// other than their last: what the node's own observations, its peer view and its events
	// need to read again. A target attempted with the same outcome as before is not in it.
	Changed []string
	// Committed lists, in commit order and each once, every target whose records this run
	// wrote or tried to write (its registry entry, its observation, its labels and changes):
	// what a read model of the crawl state reads again after the run, and nothing else.
	Committed []string

	names     map[string]bool // the server names counted in Servers
	committed map[string]bool // the ids in Committed
}

func newSummary(start time.Time) *Summary {
	return &Summary{Started: start, ByStatus: map[string]int{}, ByMethod: map[string]int{},
		names: map[string]bool{}, committed: map[string]bool{}}
}

// commit counts id among the targets whose records the run wrote.
func (s *Summary) commit(id string) {
	if id != "" && !s.committed[id] {
		s.committed[id] = true
		s.Committed = append(s.Committed, id)
	}
}

// add counts one processed target. Called from the committer only.
func (s *Summary) add(p *prepared) {
	s.Targets++
	if t := p.update.Target; t != nil && !s.names[t.Name] {
		s.names[t.Name] = true
		s.Servers++
	}
	s.ByStatus[p.status]++
	s.Labels += len(p.refs)
	for _, r := range p.refs {
		s.ByMethod[r.Method]++
	}
	if p.update.Change != nil {
		s.Changes++
	}
	if p.err != nil {
		s.Errors++
	}
	id := targetID(p)
	s.commit(id)
	if id != "" && newOutcome(p) {
		s.Changed = append(s.Changed, id)
	}
}

// newOutcome: p gave its target a new label or a status other than its last.
func newOutcome(p *prepared) bool {
	next := p.update.Observation
	return len(p.refs) > 0 || next != nil && (p.prev == nil || p.prev.Status != next.Status)
}

func (s *Summary) finish(end time.Time) { s.Duration = end.Sub(s.Started) }

func (s *Summary) run(errMsg string) state.Run {
	servers := s.Servers
	return state.Run{
		Started: s.Started, Ended: s.Started.Add(s.Duration), Targets: s.Targets, RegistryServers: &servers,
		ByStatus: s.ByStatus, Labels: s.Labels, ByMethod: s.ByMethod, Changes: s.Changes, Complete: s.Complete, Error: errMsg,
	}
}

// Write prints the summary for people: totals, then statuses by count.
func (s *Summary) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "crawl finished in %s: %d targets, %d labels, %d changes", s.Duration.Round(time.Millisecond), s.Targets, s.Labels, s.Changes)
	if !s.Complete {
		b.WriteString(" (registry harvest incomplete: nothing delisted)")
	}
	b.WriteString("\n")
	if s.Labels > 0 {
		b.WriteString("  labels:")
		for _, m := range sortedByCount(s.ByMethod) {
			fmt.Fprintf(&b, " %s %d", m[strings.LastIndex(m, ":")+1:], s.ByMethod[m])
		}
		b.WriteString("\n")
	}
	for _, k := range sortedByCount(s.ByStatus) {
		fmt.Fprintf(&b, "  %-16s %d\n", k, s.ByStatus[k])
	}
	if s.Errors > 0 {
		fmt.Fprintf(&b, "  (%d targets could not be processed; see the log)\n", s.Errors)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func sortedByCount(m map[string]int) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	return keys
}
