package check

import (
	"testing"
	"time"

	"github.com/histor-observer/histor/log/mtl"
)

// TestCatalogTargets: /check's view of the catalog, over the fixture's
// crawl state.
func TestCatalogTargets(t *testing.T) {
	f := newCheckFixture(t, nil)
	st := f.c.targets
	one := mtl.ServerID("io.example/one", endpointOK)

	ts, err := st.TargetsByEndpoint(endpointOK)
	if err != nil || len(ts) != 1 {
		t.Fatalf("TargetsByEndpoint = %+v, %v", ts, err)
	}
	want := Target{
		ID: one, Name: "io.example/one", Endpoint: endpointOK, LastStatus: "ok", LastListed: day9,
		ToolSetDigest: digestOf(t, toolsNow), SubjectDigest: "sha256-now", ToolCount: 1,
		FirstPinned: day1, UnchangedSince: day5, LastObserved: day9, Observations: 9, Changes: 1,
	}
	if !equalTarget(ts[0], want) {
		t.Errorf("target\n got %+v\nwant %+v", ts[0], want)
	}
	if ts, err := st.TargetsByName("io.example/two"); err != nil || len(ts) != 1 || ts[0].SubjectDigest != "" || ts[0].LastStatus != "timeout" {
		t.Errorf("TargetsByName(two) = %+v, %v", ts, err)
	}
	if ts, err := st.TargetsByEndpoint("https://one.example/mcp/"); err != nil || len(ts) != 0 {
		t.Errorf("a near endpoint matched: %+v, %v", ts, err)
	}

	for _, c := range []struct {
		digest      string
		ok          bool
		first, last time.Time
		n           int
	}{
		{digestOf(t, toolsOld), true, day1, day1.Add(72 * time.Hour), 4},
		{digestOf(t, toolsNow), true, day5, day9, 5},
		{digestOf(t, toolsNew), false, time.Time{}, time.Time{}, 0},
		{"", false, time.Time{}, time.Time{}, 0}, // the failed span has no digest
	} {
		sb, ok, err := st.SeenBefore(one, c.digest)
		if err != nil || ok != c.ok || !sb.FirstSeen.Equal(c.first) || !sb.LastSeen.Equal(c.last) || sb.Observations != c.n {
			t.Errorf("SeenBefore(%q) = %+v %v %v", c.digest, sb, ok, err)
		}
	}
}

// equalTarget compares with time.Equal: times read back from the store
// lose their location.
func equalTarget(a, b Target) bool {
	for _, p := range [][2]time.Time{{a.LastListed, b.LastListed}, {a.FirstPinned, b.FirstPinned}, {a.UnchangedSince, b.UnchangedSince}, {a.LastObserved, b.LastObserved}} {
		if !p[0].Equal(p[1]) {
			return false
		}
	}
	a.LastListed, a.FirstPinned, a.UnchangedSince, a.LastObserved = b.LastListed, b.FirstPinned, b.UnchangedSince, b.LastObserved
	return a == b
}
