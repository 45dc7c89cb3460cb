package crawl_test

import (
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
