package observer

import (
	"fmt"
	"io"
	"strings"

	"github.com/histor-observer/histor/sandbox"
)

// ProgressLine is the one line a stage's end prints.
func ProgressLine(s sandbox.Stage) string {
	line := fmt.Sprintf("%-8s %-8s %6.2fs", s.Name, s.Status, s.Seconds)
	if s.Detail != "" {
		line += "  " + oneLine(s.Detail, 160)
	}
	return line
}

// WriteSummary writes a short account of what the observation recorded:
// what ran, what it listed, what it reached for. It states what happened
// and draws no conclusion about the package.
func WriteSummary(w io.Writer, o *sandbox.Observation) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	name := o.Package
	if name == "" {
		name = o.Name
	}
	p("package      %s", name)
	p("status       %s%s", o.Status, suffix(o.Detail))
	p("runtime      %s %s (%s), %s root %s, network %s", o.Runtime.Name, o.Runtime.Version, o.Runtime.Platform, o.Runtime.Root, short(o.Runtime.RootDigest), o.Runtime.Network)
	if o.Status == sandbox.StatusOK {
		p("tools        %d: %s", len(o.Tools), strings.Join(toolList(o.Tools), ", "))
		digest := o.ToolSetDigest
		if digest == "" {
			digest = "none (" + o.DigestError + ")"
		}
		p("digest       %s", digest)
	}
	c := o.Calls
	p("calls        %d of %d tools called: %d answered, %d errors, %d timeouts, %d skipped; coverage %s",
		c.Attempted, c.Total, c.Successful, c.Errors, c.Timeouts, c.Skipped, completeness(c.Complete))
	p("install      %s, %.1fs; install scripts: %s", o.Install.Status, o.Install.Seconds, scriptsLine(o.Install))
	phase(p, "startup", o.Behaviour.Startup)
	phase(p, "calls", o.Behaviour.Calls)
	p("behaviour    record %s", completeness(o.Behaviour.Complete))
	if f := o.VersionFacts; f != nil {
		signals := "none"
		if len(f.Signals) > 0 {
			signals = strings.Join(f.Signals, ", ")
		}
		p("version      provenance %s, publisher %s, %d dependencies, signals: %s", f.Provenance, f.Publisher, len(f.Dependencies), signals)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func phase(p func(string, ...any), name string, ph sandbox.Phase) {
	p("%-12s %d network attempts (%d carrying a canary), %d lookups, %d decoy reads, %d placeholder uses, %d programs, %d persistent writes%s",
		name, len(ph.Network), canaries(ph.Network), len(ph.Lookups), len(ph.Decoys), len(ph.Placeholders), len(ph.Exec), len(ph.Writes), reasons(ph))
	for _, u := range ph.Placeholders {
		p("             %s seen in %s", u.Name, u.Where)
	}
	for _, d := range ph.Decoys {
		p("             read %s", d.Path)
	}
}

func scriptsLine(in sandbox.InstallRecord) string {
	if len(in.ScriptPackages) == 0 {
		return "none"
	}
	s := strings.Join(in.ScriptPackages, ", ")
	if ph := in.Scripts; ph != nil {
		s += fmt.Sprintf("; ran with %d network attempts, %d decoy reads, %d programs", len(ph.Network), len(ph.Decoys), len(ph.Exec))
		if ph.TimedOut {
			s += ", stopped at the install bound"
		}
	}
	return s
}

func canaries(as []sandbox.NetworkAttempt) int {
	n := 0
	for _, a := range as {
		if a.Canary {
			n++
		}
	}
	return n
}

func reasons(ph sandbox.Phase) string {
	if ph.Complete {
		return ""
	}
	return "; incomplete: " + strings.Join(ph.IncompleteReasons, ", ")
}

func completeness(complete bool) string {
	if complete {
		return "complete"
	}
	return "incomplete"
}

func toolList(tools []any) []string {
	var out []string
	for _, t := range tools {
		m, _ := t.(map[string]any)
		n, _ := m["name"].(string)
		out = append(out, n)
	}
	return out
}

func suffix(detail string) string {
	if detail == "" {
		return ""
	}
	return " (" + oneLine(detail, 300) + ")"
}

func short(digest string) string {
	if len(digest) > 19 {
		return digest[:19] + "…"
	}
	return digest
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
