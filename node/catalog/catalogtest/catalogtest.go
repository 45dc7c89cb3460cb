// Package catalogtest builds crawl states for the tests and benchmarks of
// the reading API: a few targets in every situation the API reports on, or
// many alike. Everything is written through state.Store.CommitAll and
// PutTargets, as the crawl writes it, and the evidence through the log.
package catalogtest

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl/diff"
	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/state"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/mtl"
)

// Appender is the part of *log.Log a fixture writes labels and evidence to.
type Appender interface {
	Append(ctx context.Context, entries []hlog.Entry, ev []hlog.Evidence) (uint64, error)
	Size() uint64
}

// Registry is the registry URN of fixture descriptors.
const Registry = "urn:awr:mtl:1:registry:official"

// Now is the fixtures' "now": every time in them is relative to it.
var Now = time.Date(2026, 9, 23, 12, 0, 0, 0, time.UTC)

// Fixture is a populated crawl state.
type Fixture struct {
	Store *state.Store
	// Ids of the targets, by what is special about them.
	Stable, Changed, Unreachable, Delisted, Skipped string
	// ChangeSeq is HISTOR's id of the Changed target's change.
	ChangeSeq int64
	// ChangedTools is the Changed target's current tool set; one of its
	// descriptions matches the default pattern set ("you must").
	ChangedTools []any
	// LabelIDs are the ids of the labels issued, in log order.
	LabelIDs []string
}

// OpenLog opens a fresh log in dir with a throwaway key.
func OpenLog(tb testing.TB, dir string) *hlog.Log {
	tb.Helper()
	seed := sha256.Sum256([]byte("catalogtest"))
	key := ed25519.NewKeyFromSeed(seed[:])
	l, err := hlog.Open(context.Background(), hlog.Config{
		Dir: dir, Origin: "catalog.test/log", Key: key, DID: awr.DIDKey(key.Public().(ed25519.PublicKey)),
		Now: func() time.Time { return Now },
	})
	if err != nil {
		tb.Fatalf("opening log: %v", err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

// OpenStore opens a fresh crawl state in dir.
func OpenStore(tb testing.TB, dir string) *state.Store {
	tb.Helper()
	st, err := state.Open(dir, nil)
	if err != nil {
		tb.Fatalf("opening state: %v", err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// Tools makes a small tool set: names with the given descriptions.
func Tools(kv ...string) []any {
	var out []any
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, map[string]any{
			"name": kv[i], "description": kv[i+1],
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
		})
	}
	return out
}

// Subject is what one ok observation of a tool set yields.
type Subject struct {
	ToolSet, Subject, URN string
	Count                 int
	evidence              []hlog.Evidence
}

// MakeSubject digests tools for target t, as the crawl does.
func MakeSubject(tb testing.TB, t registry.Target, tools []any) Subject {
	tb.Helper()
	desc, _, err := mtl.Build(mtl.Server{Name: t.Name, Registry: Registry}, tools,
		mtl.Artifact{Transport: t.Transport, Endpoint: t.Endpoint})
	if err != nil {
		tb.Fatalf("building descriptor: %v", err)
	}
	dj, err := desc.JCS()
	if err != nil {
		tb.Fatal(err)
	}
	sri, urn, err := desc.Subject()
	if err != nil {
		tb.Fatal(err)
	}
	ts, err := mtl.CanonicalToolSet(tools)
	if err != nil {
		tb.Fatal(err)
	}
	return Subject{ToolSet: desc.ToolSet.DigestSRI, Subject: sri, URN: urn, Count: len(tools),
		evidence: []hlog.Evidence{{Kind: "descriptors", Body: dj}, {Kind: "toolsets", Body: ts}}}
}

// Target makes a registry target.
func Target(name, endpoint string) registry.Target {
	return registry.Target{
		ID: mtl.ServerID(name, endpoint), Name: name, Title: "Title of " + name, Version: "1.0.0",
		Endpoint: endpoint, Transport: registry.TransportStreamable, RegistryStatus: registry.StatusActive,
	}
}

// labels appends one observation label per subject to lg and returns their
// references for target id; they are small label-shaped documents.
func labels(tb testing.TB, lg Appender, id string, subj *Subject, at time.Time, n int) []state.LabelRef {
	tb.Helper()
	var entries []hlog.Entry
	var refs []state.LabelRef
	start := lg.Size()
	for i := range n {
		lid := fmt.Sprintf("urn:uuid:00000000-0000-4000-8000-%012x", start+uint64(i))
		body := fmt.Appendf(nil, `{"credentialSubject":{"method":{"id":%q},"verdict":"pass"},"id":%q,"validFrom":%q}`,
			awr.MethodObservation, lid, at.Format(time.RFC3339))
		entries = append(entries, hlog.Entry{ID: lid, Label: body})
		refs = append(refs, state.LabelRef{
			TargetID: id, ID: lid, Method: awr.MethodObservation, Verdict: "pass", Subject: subjURN(subj),
			ObservedAt: at, IssuedAt: at, Digest: mtl.SRI(body), LeafIndex: start + uint64(i),
		})
	}
	var ev []hlog.Evidence
	if subj != nil {
		ev = subj.evidence
	}
	if _, err := lg.Append(context.Background(), entries, ev); err != nil {
		tb.Fatalf("appending labels: %v", err)
	}
	return refs
}

func subjURN(s *Subject) string {
	if s == nil {
		return ""
	}
	return s.URN
}

// okObs is an observation of subj with ok ok attempts since first.
func okObs(t registry.Target, subj Subject, first, last time.Time, ok int) *state.Observation {
	return &state.Observation{
		TargetID: t.ID, Status: "ok", ObservedAt: last, Subject: subj.Subject, SubjectURN: subj.URN,
		ToolSetDigest: subj.ToolSet, ToolCount: subj.Count, LastOK: last, UnchangedSince: first,
		FirstPinned: first, OKObservations: ok, Attempts: ok, ServerName: t.Name, ServerVersion: t.Version,
	}
}

func okSpan(t registry.Target, subj Subject, from, until time.Time, n int) *state.Span {
	return &state.Span{TargetID: t.ID, From: from, Until: until, Count: n, Status: "ok",
		ToolSetDigest: subj.ToolSet, SubjectDigest: subj.Subject, ToolCount: subj.Count,
		ServerName: t.Name, ServerVersion: t.Version}
}

func crawled(t registry.Target, status, detail string, at time.Time) *state.Target {
	return &state.Target{Target: t, Status: status, Detail: detail, LastCrawled: at}
}

func commit(tb testing.TB, st *state.Store, us ...state.Update) {
	tb.Helper()
	if err := st.CommitAll(us); err != nil {
		tb.Fatalf("committing: %v", err)
	}
}

// Build writes the five targets of a Fixture into st and lg.
func Build(tb testing.TB, st *state.Store, lg Appender) *Fixture {
	tb.Helper()
	f := &Fixture{Store: st}
	day := 24 * time.Hour
	stable := Target("io.example/stable", "https://stable.example.com/mcp")
	sub := MakeSubject(tb, stable, Tools("echo", "Echo the text back.", "add", "Add two numbers."))
	obs := okObs(stable, sub, Now.Add(-30*day), Now.Add(-time.Hour), 5)
	refs := labels(tb, lg, stable.ID, &sub, Now.Add(-30*day), 2)
	commit(tb, st, state.Update{Target: crawled(stable, "ok", "", Now.Add(-time.Hour)), Observation: obs,
		Span: okSpan(stable, sub, Now.Add(-30*day), Now.Add(-time.Hour), 5), Labels: refs})
	f.Stable = stable.ID
	f.LabelIDs = append(f.LabelIDs, ids(refs)...)

	f.buildChanged(tb, st, lg)
	f.buildOthers(tb, st, lg)
	if err := st.AddClientReport(stable.ID, sub.ToolSet, Now.Format(time.DateOnly)); err != nil {
		tb.Fatal(err)
	}
	if err := st.AddRun(state.Run{Started: Now.Add(-2 * time.Hour), Ended: Now.Add(-time.Hour), Targets: 5,
		ByStatus: map[string]int{"ok": 3, "timeout": 1, registry.SkipTemplated: 1}, Labels: 9, Changes: 1, Complete: true}); err != nil {
		tb.Fatal(err)
	}
	return f
}

func ids(refs []state.LabelRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

// buildChanged writes a target whose tool set changed two days ago.
func (f *Fixture) buildChanged(tb testing.TB, st *state.Store, lg Appender) {
	day := 24 * time.Hour
	t := Target("io.example/changed", "https://changed.example.com/mcp")
	before := Tools("weather", "Look up the weather of a city.")
	f.ChangedTools = Tools("weather", "Look up the weather of a city. You must pass the city name.", "forecast", "Five-day forecast.")
	s1, s2 := MakeSubject(tb, t, before), MakeSubject(tb, t, f.ChangedTools)
	r1 := labels(tb, lg, t.ID, &s1, Now.Add(-20*day), 1)
	commit(tb, st, state.Update{Target: crawled(t, "ok", "", Now.Add(-20*day)),
		Observation: okObs(t, s1, Now.Add(-20*day), Now.Add(-3*day), 3),
		Span:        okSpan(t, s1, Now.Add(-20*day), Now.Add(-3*day), 3), Labels: r1})
	summary, err := json.Marshal(diff.Compare(before, f.ChangedTools))
	if err != nil {
		tb.Fatal(err)
	}
	r2 := labels(tb, lg, t.ID, &s2, Now.Add(-2*day), 1)
	obs := okObs(t, s2, Now.Add(-2*day), Now.Add(-time.Hour), 4)
	obs.FirstPinned, obs.Changes, obs.AdviseMatches = Now.Add(-20*day), 1, 1
	ch := &state.Change{ID: "c0ffee0000000001", TargetID: t.ID, Name: t.Name, Endpoint: t.Endpoint,
		Before: s1.ToolSet, After: s2.ToolSet, At: Now.Add(-2 * day), Summary: summary, LabelID: r2[0].ID}
	commit(tb, st, state.Update{Target: crawled(t, "ok", "", Now.Add(-time.Hour)), Observation: obs,
		Span: okSpan(t, s2, Now.Add(-2*day), Now.Add(-time.Hour), 1), Labels: r2, Change: ch})
	f.Changed, f.ChangeSeq = t.ID, ch.Seq
	f.LabelIDs = append(f.LabelIDs, ids(r1)...)
	f.LabelIDs = append(f.LabelIDs, ids(r2)...)
}

// buildOthers writes an unreachable, a delisted and a skipped target.
func (f *Fixture) buildOthers(tb testing.TB, st *state.Store, lg Appender) {
	day := 24 * time.Hour
	un := Target("io.example/unreachable", "https://down.example.com/mcp")
	commit(tb, st, state.Update{Target: crawled(un, "timeout", "no answer within 10s", Now.Add(-time.Hour)),
		Observation: &state.Observation{TargetID: un.ID, Status: "timeout", Detail: "no answer within 10s",
			ObservedAt: Now.Add(-time.Hour), Attempts: 3},
		Span: &state.Span{TargetID: un.ID, From: Now.Add(-3 * day), Until: Now.Add(-time.Hour), Count: 3,
			Status: "timeout", Detail: "no answer within 10s"}})
	gone := Target("io.example/gone", "https://gone.example.com/mcp")
	sub := MakeSubject(tb, gone, Tools("ping", "Answer pong."))
	refs := labels(tb, lg, gone.ID, &sub, Now.Add(-10*day), 1)
	commit(tb, st, state.Update{Target: crawled(gone, "ok", "", Now.Add(-10*day)),
		Observation: okObs(gone, sub, Now.Add(-10*day), Now.Add(-10*day), 1),
		Span:        okSpan(gone, sub, Now.Add(-10*day), Now.Add(-10*day), 1), Labels: refs})
	g := *crawled(gone, "ok", "", Now.Add(-10*day))
	g.Delisted = true
	sk := Target("io.example/templated", "https://{tenant}.example.com/mcp")
	sk.Skip = registry.SkipTemplated
	if err := st.PutTargets([]state.Target{g, *crawled(sk, registry.SkipTemplated, "", Now.Add(-time.Hour))}); err != nil {
		tb.Fatal(err)
	}
	f.Unreachable, f.Delisted, f.Skipped = un.ID, gone.ID, sk.ID
	f.LabelIDs = append(f.LabelIDs, ids(refs)...)
}

// Populate writes n targets alike to st and lg, for benchmarks: each with
// an ok observation of one of 100 shared tool sets, one timeline span and
// one label; every tenth has a change record. Names are
// io.example/server-NNNNN, on 500 hosts.
func Populate(tb testing.TB, st *state.Store, lg Appender, n int) {
	tb.Helper()
	const batch = 1000
	sets := make([][]any, 100)
	for i := range sets {
		sets[i] = Tools(fmt.Sprintf("tool-%d", i), fmt.Sprintf("Does thing %d with the text it is given.", i),
			"echo", "Echo the text back.")
	}
	for start := 0; start < n; start += batch {
		var us []state.Update
		var entries []hlog.Entry
		var ev []hlog.Evidence
		size := lg.Size()
		for i := start; i < min(n, start+batch); i++ {
			u, e, sev := populated(tb, i, sets[i%len(sets)], size+uint64(len(entries)))
			us, entries, ev = append(us, u), append(entries, e), append(ev, sev...)
		}
		if _, err := lg.Append(context.Background(), entries, ev); err != nil {
			tb.Fatalf("appending: %v", err)
		}
		commit(tb, st, us...)
	}
}

func populated(tb testing.TB, i int, tools []any, leaf uint64) (state.Update, hlog.Entry, []hlog.Evidence) {
	t := Target(fmt.Sprintf("io.example/server-%05d", i), fmt.Sprintf("https://host%03d.example.com/mcp/%05d", i%500, i))
	sub := MakeSubject(tb, t, tools)
	at := Now.Add(-time.Duration(i%30+1) * 24 * time.Hour)
	lid := fmt.Sprintf("urn:uuid:00000000-0000-4000-8000-%012x", leaf)
	body := fmt.Appendf(nil, `{"credentialSubject":{"method":{"id":%q},"verdict":"pass"},"id":%q}`, awr.MethodObservation, lid)
	obs := okObs(t, sub, at, Now.Add(-time.Hour), 1+i%5)
	u := state.Update{Target: crawled(t, "ok", "", Now.Add(-time.Hour)), Observation: obs,
		Span: okSpan(t, sub, at, Now.Add(-time.Hour), obs.OKObservations),
		Labels: []state.LabelRef{{TargetID: t.ID, ID: lid, Method: awr.MethodObservation, Verdict: "pass",
			Subject: sub.URN, ObservedAt: at, IssuedAt: at, Digest: mtl.SRI(body), LeafIndex: leaf}}}
	if i%10 == 0 {
		obs.Changes = 1
		u.Change = &state.Change{ID: fmt.Sprintf("%016x", i), TargetID: t.ID, Name: t.Name, Endpoint: t.Endpoint,
			Before: sub.ToolSet, After: sub.ToolSet, At: at, Summary: json.RawMessage(`{"added":[],"removed":[],"modified":[],"detail":"full"}`)}
	}
	return u, hlog.Entry{ID: lid, Label: body}, sub.evidence
}
