package catalog_test

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/catalog/catalogtest"
)

func newFixture(t *testing.T) (*catalog.Catalog, *catalogtest.Fixture) {
	t.Helper()
	dir := t.TempDir()
	st := catalogtest.OpenStore(t, filepath.Join(dir, "state"))
	lg := catalogtest.OpenLog(t, filepath.Join(dir, "log"))
	f := catalogtest.Build(t, st, lg)
	c, err := catalog.New(catalog.Options{Store: st, Log: lg, Patterns: scan.Default(),
		Now: func() time.Time { return catalogtest.Now }})
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}

func idsOf(ss []*catalog.Server) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

func TestSearchStates(t *testing.T) {
	c, f := newFixture(t)
	if c.Len() != 5 {
		t.Fatalf("Len = %d, want 5", c.Len())
	}
	for _, tc := range []struct {
		state string
		want  []string
	}{
		// pinned first, most changes first, then by name: templated < unreachable
		{"all", []string{f.Changed, f.Stable, f.Skipped, f.Unreachable}},
		{"pinned", []string{f.Changed, f.Stable}},
		{"changed", []string{f.Changed}},
		{"flagged", []string{f.Changed}},
		{"unobserved", []string{f.Skipped, f.Unreachable}},
	} {
		st, ok := catalog.ParseState(tc.state)
		if !ok {
			t.Fatalf("ParseState(%q) refused", tc.state)
		}
		total, page := c.Search("", st, 50, 0)
		if total != len(tc.want) || !slices.Equal(idsOf(page), tc.want) {
			t.Errorf("state %s: total %d, %v; want %v", tc.state, total, idsOf(page), tc.want)
		}
	}
	if _, ok := catalog.ParseState("everything"); ok {
		t.Error("ParseState accepted an unknown state")
	}
}

func TestSearchText(t *testing.T) {
	c, f := newFixture(t)
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"STABLE", []string{f.Stable}},                  // name, any case
		{"down.example", []string{f.Unreachable}},       // endpoint
		{"title of io.example/ch", []string{f.Changed}}, // title
		{"  sta\x00ble ", []string{f.Stable}},           // NUL and surrounding space dropped
		{"gone", nil},                                   // delisted targets are not listed
		{"nothing like this", nil},
	} {
		total, page := c.Search(tc.q, catalog.StateAll, 50, 0)
		if total != len(tc.want) || !slices.Equal(idsOf(page), tc.want) {
			t.Errorf("q %q: total %d, %v; want %v", tc.q, total, idsOf(page), tc.want)
		}
	}
	total, page := c.Search("example", catalog.StateAll, 2, 1)
	if total != 4 || !slices.Equal(idsOf(page), []string{f.Stable, f.Skipped}) {
		t.Errorf("paged: total %d, %v", total, idsOf(page))
	}
	if total, page := c.Search("", catalog.StateAll, 10, 10); total != 4 || len(page) != 0 {
		t.Errorf("offset past the end: total %d, %d rows", total, len(page))
	}
}

func TestLookups(t *testing.T) {
	c, f := newFixture(t)
	if s := c.ByID(f.Delisted); s == nil || !s.Delisted {
		t.Errorf("ByID(delisted) = %+v", s)
	}
	if c.ByID("0000000000000000") != nil {
		t.Error("ByID found an unknown id")
	}
	if got := c.ByEndpoint("  https://stable.example.com/mcp\n"); len(got) != 1 || got[0].ID != f.Stable {
		t.Errorf("ByEndpoint = %v", idsOf(got))
	}
	if got := c.ByName("io.example/changed"); len(got) != 1 || got[0].ID != f.Changed {
		t.Errorf("ByName = %v", idsOf(got))
	}
	if s := c.Lookup("", "io.example/gone"); s == nil || s.ID != f.Delisted {
		t.Errorf("Lookup of a delisted name = %v", s)
	}
	if c.Lookup("https://unknown.example/mcp", "") != nil {
		t.Error("Lookup found an unknown endpoint")
	}
	got, err := c.LabelTarget(f.LabelIDs[0])
	if err != nil || got != f.Stable {
		t.Errorf("LabelTarget = %q, %v", got, err)
	}
	if got, err := c.LabelTarget("urn:uuid:unknown"); err != nil || got != "" {
		t.Errorf("LabelTarget(unknown) = %q, %v", got, err)
	}
}

func TestToolSetSeen(t *testing.T) {
	c, f := newFixture(t)
	old := c.ByID(f.Changed)
	tl, err := c.Timeline(f.Changed)
	if err != nil || len(tl) != 2 {
		t.Fatalf("Timeline = %d spans, %v", len(tl), err)
	}
	first := tl[1].ToolSetDigest // oldest span, the set before the change
	seen, err := c.ToolSetSeen(f.Changed, first)
	if err != nil || seen == nil {
		t.Fatalf("ToolSetSeen = %v, %v", seen, err)
	}
	day := 24 * time.Hour
	if !seen.FirstSeen.Equal(catalogtest.Now.Add(-20*day)) || !seen.LastSeen.Equal(catalogtest.Now.Add(-3*day)) || seen.Observations != 3 {
		t.Errorf("seen = %+v", seen)
	}
	b, _ := seen.MarshalJSON()
	if want := `{"first_seen":"2026-09-03T12:00:00Z","last_seen":"2026-09-20T12:00:00Z","observations":3}`; string(b) != want {
		t.Errorf("seen JSON = %s, want %s", b, want)
	}
	if seen, err := c.ToolSetSeen(f.Changed, old.Obs.Subject); err != nil || seen != nil {
		t.Errorf("ToolSetSeen of a digest never served = %v, %v", seen, err)
	}
}

func TestPatternMatches(t *testing.T) {
	c, f := newFixture(t)
	s := c.ByID(f.Changed)
	ms, err := c.PatternMatches(s)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ms, func(m catalog.Match) bool { return m.Span == "you must" })
	if i < 0 {
		t.Fatalf("no match with span \"you must\" in %+v", ms)
	}
	if m := ms[i]; m.Tool != "weather" || m.Where != "description" || m.Tier != "advise" || m.Code == "" {
		t.Errorf("match = %+v", m)
	}
	again, _ := c.PatternMatches(s)
	if &again[0] != &ms[0] {
		t.Error("second scan of the same set was not served from the cache")
	}
	none, err := c.PatternMatches(c.ByID(f.Unreachable))
	if err != nil || none != nil {
		t.Errorf("matches of a target without a tool set = %v, %v", none, err)
	}
}

func TestDetail(t *testing.T) {
	c, f := newFixture(t)
	ls, err := c.Labels(f.Changed)
	if err != nil || len(ls) != 2 || ls[0].LeafIndex < ls[1].LeafIndex {
		t.Errorf("Labels = %+v, %v; want 2, latest first", ls, err)
	}
	cs, err := c.ChangesOf([]string{f.Changed, f.Stable}, 20)
	if err != nil || len(cs) != 1 || cs[0].Seq != f.ChangeSeq {
		t.Errorf("ChangesOf = %+v, %v", cs, err)
	}
	if ch, err := c.Change(f.ChangeSeq + 1); err != nil || ch != nil {
		t.Errorf("Change(unknown) = %v, %v", ch, err)
	}
	if n := c.ChangesSince(catalogtest.Now.Add(-7 * 24 * time.Hour)); n != 1 {
		t.Errorf("ChangesSince(7d) = %d", n)
	}
	if n := c.ChangesSince(catalogtest.Now.Add(-24 * time.Hour)); n != 0 {
		t.Errorf("ChangesSince(1d) = %d", n)
	}
	want := catalog.Counts{Listed: 4, Pinned: 2, EverChanged: 1, BlockTier: 0, AdviseOnly: 1, NameRecords: 0, NotAttempted: 1, Servers: 4}
	if got := c.Counts(); got != want {
		t.Errorf("Counts = %+v, want %+v", got, want)
	}
	hosts, distinct := c.Hosts(50)
	if distinct != 3 || len(hosts) != 3 || hosts[0].Endpoints != 1 {
		t.Errorf("Hosts = %+v, %d", hosts, distinct)
	}
	if run, n := c.LastRun(); run == nil || n != 1 || !run.Complete {
		t.Errorf("LastRun = %+v, %d", run, n)
	}
	if ts, err := c.ToolSet(c.ByID(f.Stable)); err != nil || len(ts) == 0 {
		t.Errorf("ToolSet = %d bytes, %v", len(ts), err)
	}
}

func TestClientReports(t *testing.T) {
	c, f := newFixture(t)
	today := catalogtest.Now.Format(time.DateOnly)
	if n := c.ReportsSince(today); n != 1 {
		t.Fatalf("ReportsSince = %d, want 1", n)
	}
	digest := c.ByID(f.Stable).Obs.ToolSetDigest
	if err := c.AddClientReport(f.Stable, digest); err != nil {
		t.Fatal(err)
	}
	if n := c.ReportsSince(today); n != 2 {
		t.Errorf("after AddClientReport, ReportsSince = %d, want 2", n)
	}
	rows, err := c.ClientReports(f.Stable)
	if err != nil || len(rows) != 1 || rows[0].Reports != 2 || rows[0].FirstDay != today || rows[0].ToolSet != digest {
		t.Errorf("ClientReports = %+v, %v", rows, err)
	}
}

// TestReloadUnderReaders reloads while readers search: each reader sees a
// whole snapshot, the old one or the new one.
func TestReloadUnderReaders(t *testing.T) {
	c, f := newFixture(t)
	st := f.Store
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if total, page := c.Search("", catalog.StateAll, 50, 0); total != len(page) || (total != 4 && total != 5) {
					t.Errorf("reader saw total %d with %d rows", total, len(page))
					return
				}
			}
		})
	}
	nt := catalogtest.Target("io.example/new", "https://new.example.com/mcp")
	if err := st.PutTargets([]state.Target{{Target: nt}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Reload(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if c.ByID(nt.ID) == nil {
		t.Error("Reload did not pick up the new target")
	}
}
