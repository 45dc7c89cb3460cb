package gvisor

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/histor-observer/histor/sandbox"
)

// The bounds of each phase's lists, HISTOR's.
const (
	MaxList    = 40
	MaxLookups = 60
)

// The reasons a trace is incomplete, HISTOR's names.
const (
	ReasonTraceMissing     = "trace-missing"
	ReasonTraceEmpty       = "trace-empty"
	ReasonUnattributed     = "unattributed-trace-record"
	ReasonUnresolvedSocket = "socket-destination-unresolved"
	ReasonRelativePath     = "relative-path-unresolved"
	ReasonUnparsed         = "unparsed-syscall"
	ReasonTruncated        = "trace-truncated"
)

// Window is one phase of a run, by wall-clock time.
type Window struct {
	Name     string
	From, To time.Time
}

// Connection is one connect or send with a destination.
type Connection struct {
	Syscall    string // connect, sendto, sendmsg, sendmmsg
	Family     string // inet, inet6, unix
	Protocol   string // tcp, udp, unix; "" when the socket was not seen made
	Address    string
	Port       int
	Errno      int  // 0 when the call succeeded
	Unresolved bool // the trace did not show the destination
}

// Attempt is c as sandbox.Observation records it.
func (c Connection) Attempt() sandbox.NetworkAttempt {
	proto := c.Protocol
	if proto == "" {
		proto = c.Family
	}
	return sandbox.NetworkAttempt{Protocol: proto, Address: c.Address, Port: c.Port}
}

// PhaseTrace is what one phase did, each list sorted, unique and bounded.
type PhaseTrace struct {
	Name      string
	Exec      []string     // programs started, not by PID 1: base name and up to five arguments
	Network   []Connection // destinations attempted
	Decoys    []string     // decoy files opened successfully
	Writes    []string     // paths written that would persist
	Truncated bool         // a list hit MaxList
	// Reasons are why this phase's record is incomplete: what its own
	// lines could not attribute, and what is wrong with the whole trace
	// (missing, empty, lines outside every phase, cut short). Sorted.
	Reasons []string
}

// Fill copies p into ph with reasons (p.Reasons, or whichever the caller
// decides) as its incompleteness reasons.
func (p PhaseTrace) Fill(ph *sandbox.Phase, reasons []string) {
	ph.Exec = append(ph.Exec, p.Exec...)
	for _, c := range p.Network {
		ph.Network = append(ph.Network, c.Attempt())
	}
	for _, d := range p.Decoys {
		ph.Decoys = append(ph.Decoys, sandbox.DecoyRead{Path: d})
	}
	ph.Writes = append(ph.Writes, p.Writes...)
	ph.Truncated = ph.Truncated || p.Truncated
	ph.IncompleteReasons = append(ph.IncompleteReasons, reasons...)
	ph.Complete = len(ph.IncompleteReasons) == 0
}

// TraceReport is a parsed run trace.
type TraceReport struct {
	Phases  []PhaseTrace // one per Window, in order
	Reasons []string     // why some phase is incomplete (every phase's reasons), sorted; empty when complete
	Records int          // syscall exit lines attributed to a phase
}

// ReadTrace parses every runsc.log.*.boot.txt in dir. Times in the log are
// in loc (runsc writes local time without a year).
func ReadTrace(dir string, windows []Window, c Classifier, loc *time.Location) (TraceReport, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "runsc.log.*.boot.txt"))
	if err != nil {
		return TraceReport{}, fmt.Errorf("finding trace logs: %w", err)
	}
	p := newParser(windows, c, loc)
	if len(logs) == 0 {
		p.reason(ReasonTraceMissing)
	}
	slices.Sort(logs)
	for _, name := range logs {
		f, err := os.Open(name)
		if err != nil {
			return TraceReport{}, fmt.Errorf("opening trace log: %w", err)
		}
		err = p.read(f)
		f.Close()
		if err != nil {
			return TraceReport{}, fmt.Errorf("reading trace log %s: %w", filepath.Base(name), err)
		}
	}
	return p.result(), nil
}

// ParseTrace parses one boot log.
func ParseTrace(r io.Reader, windows []Window, c Classifier, loc *time.Location) (TraceReport, error) {
	p := newParser(windows, c, loc)
	if err := p.read(r); err != nil {
		return TraceReport{}, fmt.Errorf("reading trace: %w", err)
	}
	return p.result(), nil
}

type sockKey struct{ pid, fd int }

type phaseSets struct {
	exec, decoys, writes map[string]bool
	network              map[Connection]bool
	reasons              map[string]bool // this phase's own
}

type parser struct {
	windows []Window
	c       Classifier
	loc     *time.Location
	phases  []phaseSets
	reasons map[string]bool       // the whole trace's
	sockets map[sockKey]string    // protocol of each socket a process made
	peers   map[string]Connection // where each socket (runsc's socket:[N]) was connected
	records int
}

func newParser(windows []Window, c Classifier, loc *time.Location) *parser {
	if loc == nil {
		loc = time.Local
	}
	p := &parser{windows: windows, c: c, loc: loc, reasons: map[string]bool{}, sockets: map[sockKey]string{},
		peers: map[string]Connection{}}
	for range windows {
		p.phases = append(p.phases, phaseSets{map[string]bool{}, map[string]bool{}, map[string]bool{},
			map[Connection]bool{}, map[string]bool{}})
	}
	return p
}

// reason makes every phase incomplete; phaseReason only ph.
func (p *parser) reason(r string) { p.reasons[r] = true }

func (p *parser) phaseReason(ph *phaseSets, r string) { ph.reasons[r] = true }

// maxLine bounds one log line; runsc's own bound (--strace-log-size per
// argument) keeps real lines far below it.
const maxLine = 1 << 20

func (p *parser) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		p.line(sc.Text())
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			p.reason(ReasonTruncated)
			return nil
		}
		return err
	}
	return nil
}

// An exit line: I1201 22:50:31.393701   15512 strace.go:608] [   1:   1] node X openat(...) = 3 (0x3) (57µs)
var exitRE = regexp.MustCompile(`^[IWEF](\d{4} \d{2}:\d{2}:\d{2}\.\d{6})\s+\d+ strace\.go:\d+\] \[\s*(\d+):\s*\d+\] .*? X (\w+)\((.*)\) = (.*)$`)

var errnoRE = regexp.MustCompile(` errno=(\d+) `)

func (p *parser) line(s string) {
	m := exitRE.FindStringSubmatch(s)
	if m == nil {
		return
	}
	at, ok := p.stamp(m[1])
	idx := -1
	if ok {
		idx = slices.IndexFunc(p.windows, func(w Window) bool { return !at.Before(w.From) && !at.After(w.To) })
	}
	if idx < 0 {
		p.reason(ReasonUnattributed)
		return
	}
	p.records++
	pid, _ := strconv.Atoi(m[2])
	errno := 0
	if e := errnoRE.FindStringSubmatch(m[5] + " "); e != nil {
		errno, _ = strconv.Atoi(e[1])
	}
	ev := event{pid: pid, call: m[3], args: m[4], ret: m[5], errno: errno}
	if strings.Contains(ev.args, `"...`) { // runsc's mark of a string cut at --strace-log-size
		p.phaseReason(&p.phases[idx], ReasonTruncated)
	}
	p.event(&p.phases[idx], ev)
}

// stamp reads "MMDD hh:mm:ss.uuuuuu" in the year nearest the first window.
func (p *parser) stamp(s string) (time.Time, bool) {
	ref := time.Now().In(p.loc)
	if len(p.windows) > 0 {
		ref = p.windows[0].From.In(p.loc)
	}
	best, found := time.Time{}, false
	for _, y := range []int{ref.Year() - 1, ref.Year(), ref.Year() + 1} {
		t, err := time.ParseInLocation("2006 0102 15:04:05.000000", strconv.Itoa(y)+" "+s, p.loc)
		if err != nil {
			return time.Time{}, false
		}
		if !found || t.Sub(ref).Abs() < best.Sub(ref).Abs() {
			best, found = t, true
		}
	}
	return best, found
}

func (p *parser) result() TraceReport {
	t := TraceReport{Records: p.records}
	if p.records == 0 && !p.reasons[ReasonTraceMissing] {
		p.reason(ReasonTraceEmpty)
	}
	for i, w := range p.windows {
		ph := PhaseTrace{Name: w.Name}
		var tr [4]bool
		ph.Exec, tr[0] = bounded(p.phases[i].exec)
		ph.Decoys, tr[1] = bounded(p.phases[i].decoys)
		ph.Writes, tr[2] = bounded(p.phases[i].writes)
		ph.Network, tr[3] = boundedConns(p.phases[i].network)
		ph.Truncated = slices.Contains(tr[:], true)
		if ph.Truncated {
			p.phaseReason(&p.phases[i], ReasonTruncated)
		}
		ph.Reasons = sortedKeys(p.reasons, p.phases[i].reasons)
		t.Phases = append(t.Phases, ph)
	}
	all := []map[string]bool{p.reasons}
	for _, ph := range p.phases {
		all = append(all, ph.reasons)
	}
	t.Reasons = sortedKeys(all...)
	return t
}

func sortedKeys(sets ...map[string]bool) []string {
	out := []string{}
	for _, set := range sets {
		for k := range set {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func bounded(set map[string]bool) ([]string, bool) {
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	slices.Sort(out)
	if len(out) > MaxList {
		return out[:MaxList], true
	}
	return out, false
}

func boundedConns(set map[Connection]bool) ([]Connection, bool) {
	out := make([]Connection, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Connection) int {
		return strings.Compare(fmt.Sprintf("%s|%s|%05d|%s", a.Address, a.Protocol, a.Port, a.Syscall),
			fmt.Sprintf("%s|%s|%05d|%s", b.Address, b.Protocol, b.Port, b.Syscall))
	})
	if len(out) > MaxList {
		return out[:MaxList], true
	}
	return out, false
}

// Bound clips a list (e.g. the lookups a trap logged) to n.
func Bound(list []string, n int) ([]string, bool) {
	if len(list) > n {
		return list[:n], true
	}
	return list, false
}

// clip shortens a recorded string the way HISTOR does.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
