package crawl_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/registry/registrytest"
)

// TestSummaryChanged: a crawl says which targets it gave a new label or a new status, so
// the node rereads those alone; a target seen as before is not among them.
func TestSummaryChanged(t *testing.T) {
	e := newEnv(t)
	steady := serve(t, stateless(toolServer(baseTools)))
	changed := map[string]string{}
	for k, v := range baseTools {
		changed[k] = v + " Now with more."
	}
	sw := &switchable{a: stateless(toolServer(baseTools)), b: stateless(toolServer(changed))}
	moving := serve(t, sw)
	reg := registrytest.Server(t, []registrytest.Entry{
		{Name: "io.example/steady", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: steady.URL + "/mcp"}}},
		{Name: "io.example/moving", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: moving.URL + "/mcp"}}},
	})
	c := e.crawler(t, reg.URL, nil)
	ids := func(sum *crawl.Summary) []string {
		var out []string
		for _, id := range sum.Changed {
			tg, err := e.st.Target(id)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tg.Name)
		}
		slices.Sort(out)
		return out
	}
	steps := []struct {
		what  string
		which int32
		want  []string
	}{
		{"first crawl", 0, []string{"io.example/moving", "io.example/steady"}},
		{"nothing changed", 0, nil},
		{"moving's tools changed", 1, []string{"io.example/moving"}},
		{"moving answers 503", 2, []string{"io.example/moving"}},
		{"moving still answers 503", 2, nil},
	}
	for _, s := range steps {
		sw.which.Store(s.which)
		e.clock.advance(2 * time.Hour)
		if got := ids(e.run(t, c)); !slices.Equal(got, s.want) {
			t.Errorf("%s: changed %v, want %v", s.what, got, s.want)
		}
	}
}

// TestSummaryCommitted: a crawl lists every target whose records it wrote, so a read model
// that reads those again equals one loaded whole: each target whose registry entry,
// observation or changes differ after a run is among them, a delisted one included.
func TestSummaryCommitted(t *testing.T) {
	e := newEnv(t)
	steady := serve(t, stateless(toolServer(baseTools)))
	changed := map[string]string{}
	for k, v := range baseTools {
		changed[k] = v + " Now with more."
	}
	sw := &switchable{a: stateless(toolServer(baseTools)), b: stateless(toolServer(changed))}
	moving := serve(t, sw)
	a := registrytest.Entry{Name: "io.example/steady", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: steady.URL + "/mcp"}}}
	b := registrytest.Entry{Name: "io.example/moving", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: moving.URL + "/mcp"}}}
	both := registrytest.Server(t, []registrytest.Entry{a, b}).URL
	onlyA := registrytest.Server(t, []registrytest.Entry{a}).URL
	steps := []struct {
		what     string
		registry string
		which    int32
	}{
		{"first crawl", both, 0},
		{"nothing changed", both, 0},
		{"moving's tools changed", both, 1},
		{"moving answers 503", both, 2},
		{"moving delisted", onlyA, 2},
	}
	for _, s := range steps {
		before := records(t, e)
		sw.which.Store(s.which)
		e.clock.advance(2 * time.Hour)
		sum := e.run(t, e.crawler(t, s.registry, nil))
		after := records(t, e)
		var differ []string
		for id, rec := range after {
			if before[id] != rec {
				differ = append(differ, id)
			}
		}
		if len(differ) == 0 {
			t.Fatalf("%s: no record changed; the step tests nothing", s.what)
		}
		for _, id := range differ {
			if !slices.Contains(sum.Committed, id) {
				t.Errorf("%s: %s's records changed, but Committed is %v", s.what, id, sum.Committed)
			}
		}
		if seen := slices.Compact(slices.Sorted(slices.Values(sum.Committed))); len(seen) != len(sum.Committed) {
			t.Errorf("%s: Committed lists a target twice: %v", s.what, sum.Committed)
		}
	}
}

// records is each target's stored records (registry entry, observation, changes) as text.
func records(t *testing.T, e *env) map[string]string {
	t.Helper()
	out := map[string]string{}
	add := func(id string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out[id] += string(b) + "\n"
	}
	ts, err := e.st.Targets()
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range ts {
		add(tg.ID, tg)
	}
	obs, err := e.st.Observations()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		add(o.TargetID, o)
	}
	cs, err := e.st.Changes(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		add(c.TargetID, c)
	}
	return out
}
