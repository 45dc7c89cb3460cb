package state

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl/registry"
)

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

func TestCommitAndReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	tg := &Target{Target: registry.Target{ID: "00112233aabbccdd", Name: "io.example/a", Endpoint: "https://a.example/mcp"}, Status: "ok", LastCrawled: at}
	obs := &Observation{TargetID: tg.ID, Status: "ok", ObservedAt: at, ToolSetDigest: "sha256-x",
		Labels: map[string]string{"m": "urn:uuid:1"},
		Anchor: &Anchor{LabelID: "urn:uuid:1", ObservedAt: at, ToolCount: 2}}
	if err := s.Commit(Update{Target: tg, Observation: obs}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gotT, err := s.Target(tg.ID)
	if err != nil || gotT.Name != "io.example/a" || gotT.Status != "ok" || !gotT.LastCrawled.Equal(at) {
		t.Fatalf("target after reopen = %+v, %v", gotT, err)
	}
	gotO, err := s.Observation(tg.ID)
	if err != nil || gotO.ToolSetDigest != "sha256-x" || gotO.Anchor == nil || gotO.Anchor.ToolCount != 2 || gotO.Labels["m"] != "urn:uuid:1" {
		t.Fatalf("observation after reopen = %+v, %v", gotO, err)
	}
	if _, err := s.Observation("missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing observation: %v, want ErrNotFound", err)
	}
}

func TestChangesNewestFirst(t *testing.T) {
	s, _ := openTemp(t)
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i, id := range []string{"c1", "c2", "c3"} {
		c := &Change{ID: id, TargetID: "t", At: base.Add(time.Duration(i) * time.Hour), Summary: json.RawMessage(`{"added":[]}`)}
		if err := s.Commit(Update{Change: c}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.Changes(0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range all {
		ids = append(ids, c.ID)
	}
	if len(ids) != 3 || ids[0] != "c3" || ids[2] != "c1" {
		t.Fatalf("changes order %v, want c3 c2 c1", ids)
	}
	two, _ := s.Changes(2)
	if len(two) != 2 {
		t.Errorf("limit 2 gave %d", len(two))
	}
	c, err := s.Change("c2")
	if err != nil || c.TargetID != "t" || string(c.Summary) != `{"added":[]}` {
		t.Fatalf("change by id = %+v, %v", c, err)
	}
	if _, err := s.Change("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing change: %v", err)
	}
	if err := s.Commit(Update{Change: &Change{ID: "", TargetID: "t"}}); err == nil {
		t.Error("a change without id was stored")
	}
}

func TestTargetsPatternSetRuns(t *testing.T) {
	s, _ := openTemp(t)
	ts := []Target{{Target: registry.Target{ID: "b"}}, {Target: registry.Target{ID: "a", Delisted: true}}}
	if err := s.PutTargets(ts); err != nil {
		t.Fatal(err)
	}
	got, err := s.Targets()
	if err != nil || len(got) != 2 || got[0].ID != "a" || !got[0].Delisted {
		t.Fatalf("targets = %+v, %v", got, err)
	}
	if d, err := s.PatternSet(); err != nil || d != "" {
		t.Fatalf("empty pattern set = %q, %v", d, err)
	}
	if err := s.SetPatternSet("sha256-p"); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.PatternSet(); d != "sha256-p" {
		t.Errorf("pattern set = %q", d)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		if err := s.AddRun(Run{Started: t0.Add(time.Duration(i) * time.Hour), Targets: i}); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := s.Runs(0)
	if err != nil || len(runs) != 3 || runs[0].Targets != 2 {
		t.Fatalf("runs = %+v, %v", runs, err)
	}
	obs, err := s.Observations()
	if err != nil || len(obs) != 0 {
		t.Errorf("observations of an empty store = %v, %v", obs, err)
	}
}
