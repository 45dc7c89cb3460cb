package catalog

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/node/catalog/catalogtest"
)

// TestUpdateEqualsReload: after commits of every kind (a new status, a new
// change, a delisting, a new target, a change of a target the caller did not
// name), Update over the targets written gives the snapshot a whole Reload
// loads from the same store, and keeps every other server as it was, with
// what its Memo holds.
func TestUpdateEqualsReload(t *testing.T) {
	dir := t.TempDir()
	st := catalogtest.OpenStore(t, filepath.Join(dir, "state"))
	lg := catalogtest.OpenLog(t, filepath.Join(dir, "log"))
	f := catalogtest.Build(t, st, lg)
	catalogtest.Populate(t, st, lg, 300)
	now := catalogtest.Now
	c, err := New(Options{Store: st, Log: lg, Patterns: scan.Default(), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	targets, err := st.Targets()
	if err != nil {
		t.Fatal(err)
	}
	pick := func(i int) state.Target { return targets[i] }
	steps := []struct {
		what   string
		commit func(t *testing.T) []string // the ids it wrote, as a crawl's Committed lists them
	}{
		{"a target answers 503", func(t *testing.T) []string {
			tg := pick(7)
			obs := observation(t, st, tg.ID)
			tg.Status, tg.LastCrawled = "http-503", now.Add(time.Minute)
			obs.Status, obs.ObservedAt, obs.Attempts = "http-503", now.Add(time.Minute), obs.Attempts+1
			commitAll(t, st, state.Update{Target: &tg, Observation: obs})
			return []string{tg.ID}
		}},
		{"a target's tool set changed", func(t *testing.T) []string {
			tg := pick(11)
			obs := observation(t, st, tg.ID)
			obs.Changes++
			commitAll(t, st, state.Update{Target: &tg, Observation: obs, Change: change(tg, "feed000000000001", now.Add(2*time.Minute))})
			return []string{tg.ID}
		}},
		{"a target delisted", func(t *testing.T) []string {
			tg := pick(3)
			tg.Delisted = true
			if err := st.PutTargets([]state.Target{tg}); err != nil {
				t.Fatal(err)
			}
			return []string{tg.ID}
		}},
		{"a new target", func(t *testing.T) []string {
			reg := catalogtest.Target("io.example/newcomer", "https://new.example.com/mcp")
			tg := state.Target{Target: reg, Status: "timeout", LastCrawled: now}
			commitAll(t, st, state.Update{Target: &tg, Observation: &state.Observation{TargetID: reg.ID, Status: "timeout", ObservedAt: now, Attempts: 1}})
			return []string{reg.ID}
		}},
		{"a change of a target not named", func(t *testing.T) []string {
			tg := pick(20)
			commitAll(t, st, state.Update{Change: change(tg, "feed000000000002", now.Add(3*time.Minute))})
			return []string{f.Stable}
		}},
		{"nothing written", func(t *testing.T) []string { return nil }},
		{"a crawl of every target", func(t *testing.T) []string {
			var ids []string
			for _, tg := range targets[:len(targets)/2] {
				obs := observation(t, st, tg.ID)
				obs.Attempts++
				commitAll(t, st, state.Update{Target: &tg, Observation: obs})
				ids = append(ids, tg.ID)
			}
			return ids
		}},
	}
	for _, s := range steps {
		before := c.current()
		for _, sv := range before.servers {
			sv.Memo(func(s *Server) any { return s.ID })
		}
		ids := s.commit(t)
		now = now.Add(time.Second)
		if err := c.Update(ids); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		whole, err := New(Options{Store: st, Log: lg, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		got, want := describe(c.current()), describe(whole.current())
		if got != want {
			t.Fatalf("%s: the updated snapshot differs from a reload:\n%s", s.what, firstDiff(got, want))
		}
		kept := 0
		for id, sv := range c.current().byID {
			if before.byID[id] == sv {
				kept++
				if v := sv.memo.Load(); v == nil {
					t.Errorf("%s: %s kept without its memo", s.what, id)
				}
			}
		}
		// Few ids are read one by one (one more for the unnamed change);
		// many by a scan of the store, which reads every server again.
		reread, few := len(c.current().byID)-kept, (len(ids)+1)*rereadScan <= len(before.byID)
		if few && reread > len(ids)+1 || !few && kept != 0 {
			t.Errorf("%s: %d servers read again, %d kept, for %d ids written", s.what, reread, kept, len(ids))
		}
	}
}

func observation(t *testing.T, st *state.Store, id string) *state.Observation {
	t.Helper()
	o, err := st.Observation(id)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func change(tg state.Target, id string, at time.Time) *state.Change {
	return &state.Change{ID: id, TargetID: tg.ID, Name: tg.Name, Endpoint: tg.Endpoint, At: at,
		Summary: json.RawMessage(`{"added":[],"removed":[],"modified":[],"detail":"full"}`)}
}

func commitAll(t *testing.T, st *state.Store, us ...state.Update) {
	t.Helper()
	if err := st.CommitAll(us); err != nil {
		t.Fatal(err)
	}
}

// describe renders everything a snapshot serves, one fact a line.
func describe(s *snapshot) string {
	var b strings.Builder
	line := func(k string, v any) {
		j, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(&b, "%s %s\n", k, j)
	}
	idsOf := func(ss []*Server) []string {
		out := make([]string, len(ss))
		for i, sv := range ss {
			out[i] = sv.ID
		}
		return out
	}
	line("servers", idsOf(s.servers))
	for _, sv := range s.servers {
		line("server "+sv.ID, []any{sv.Target, sv.Obs, sv.Observed, sv.ChangeCount, sv.changeSeqs})
		if s.byID[sv.ID] != sv {
			line("byID differs "+sv.ID, nil)
		}
	}
	line("byID", len(s.byID))
	for st := range stateCount {
		line("listed "+st.String(), idsOf(s.listed[st].servers))
		line("text "+st.String(), string(s.listed[st].text))
		line("starts "+st.String(), s.listed[st].starts)
	}
	for _, sv := range s.servers {
		line("endpoint "+sv.Endpoint, idsOf(s.byEndpoint[NormalizeEndpoint(sv.Endpoint)]))
		line("name "+sv.Name, idsOf(s.byName[sv.Name]))
	}
	line("changeTimes", s.changeTimes)
	line("maxSeq", s.maxSeq)
	line("counts", s.counts)
	line("hosts", s.hosts)
	line("distinct", s.distinct)
	line("lastRun", s.lastRun)
	line("runs", s.runs)
	line("loadedAt", s.loadedAt)
	return b.String()
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d\ngot  %.400s\nwant %.400s", i, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}
