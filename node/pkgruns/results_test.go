package pkgruns

import (
	"context"
	"slices"
	"testing"

	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/queue"
)

// TestHandleRecordsLabelsForEveryTarget: a result for a package is recorded
// through the Recorder for every target listing that package, with the
// behaviour record as evidence; Committed hears those targets, once, and the
// same result handled again records nothing more.
func TestHandleRecordsLabelsForEveryTarget(t *testing.T) {
	runs := newFakeRuns(npmTarget("a", "npm:tiny-weather"), npmTarget("b", "npm:tiny-weather"), npmTarget("c", "npm:other"))
	rec, c := &fakeRecorder{runs: runs}, &commits{}
	p := testPart(runs, rec, c)
	res := queue.Result{JobID: "j1", Target: "npm:tiny-weather@1.0.0", Observation: observation(t, "npm:tiny-weather@1.0.0", sandbox.StatusOK)}
	if err := p.handle(context.Background(), res); err != nil {
		t.Fatal(err)
	}
	if len(rec.calls) != 2 {
		t.Fatalf("%d records, want one per target of the package (2)", len(rec.calls))
	}
	for _, c := range rec.calls {
		if c.target.Package != "npm:tiny-weather@1.0.0" || c.run.Version != "1.0.0" || c.run.Behaviour == "" || c.run.BehaviourSHA256 == "" {
			t.Errorf("record of %s: package %q, run %+v", c.target.ID, c.target.Package, c.run)
		}
		if len(c.evidence) != 1 || c.evidence[0].Kind != hlog.EvidenceBehaviour || len(c.obs.Tools) != 1 {
			t.Errorf("record of %s: evidence %v, %d tools", c.target.ID, c.evidence, len(c.obs.Tools))
		}
	}
	if len(c.ids) != 1 || !slices.Equal(c.ids[0], []string{"a", "b"}) {
		t.Errorf("committed %v; want [[a b]]", c.ids)
	}
	if err := p.handle(context.Background(), res); err != nil {
		t.Fatal(err)
	}
	if len(rec.calls) != 2 || len(c.ids) != 1 {
		t.Errorf("the same result again: %d records, committed %v; want nothing more", len(rec.calls), c.ids)
	}
}

// TestHandleInfrastructureStatus: a poisoned job is kept as a run in the
// state, with no labels, and the version is scheduled again.
func TestHandleInfrastructureStatus(t *testing.T) {
	runs := newFakeRuns(npmTarget("a", "npm:broken"))
	rec, c := &fakeRecorder{runs: runs}, &commits{}
	p := testPart(runs, rec, c)
	res := queue.Result{JobID: "j1", Target: "npm:broken@2.0.0", Observation: observation(t, "npm:broken@2.0.0", sandbox.StatusPoisoned)}
	if err := p.handle(context.Background(), res); err != nil {
		t.Fatal(err)
	}
	run, err := runs.PackageRun("a")
	if err != nil || run.Status != sandbox.StatusPoisoned || run.Version != "2.0.0" {
		t.Fatalf("run %+v, %v; want poisoned 2.0.0", run, err)
	}
	if len(rec.calls) != 0 || len(c.ids) != 0 {
		t.Errorf("%d records, committed %v; want no labels, nothing committed", len(rec.calls), c.ids)
	}
	if done, err := p.observed("a", "2.0.0"); err != nil || done {
		t.Errorf("observed after a poisoned run: %v, %v; want false (queued again)", done, err)
	}
}

// TestHandleDropsForeignResults: a result whose observation is of another
// package, or does not parse, is dropped (nil error: it would come back
// forever) and records nothing.
func TestHandleDropsForeignResults(t *testing.T) {
	runs := newFakeRuns(npmTarget("a", "npm:tiny-weather"))
	rec := &fakeRecorder{runs: runs}
	p := testPart(runs, rec, &commits{})
	for _, res := range []queue.Result{
		{JobID: "j1", Target: "npm:tiny-weather@1.0.0", Observation: observation(t, "npm:evil@1.0.0", sandbox.StatusOK)},
		{JobID: "j2", Target: "npm:tiny-weather@1.0.0", Observation: []byte(`{"type":"other"}`)},
	} {
		if err := p.handle(context.Background(), res); err != nil {
			t.Errorf("job %s: %v, want dropped", res.JobID, err)
		}
	}
	if len(rec.calls) != 0 || len(runs.last) != 0 {
		t.Errorf("%d records, %d runs; want none", len(rec.calls), len(runs.last))
	}
}

func TestSpecVersionAndKey(t *testing.T) {
	for _, c := range []struct{ spec, version, key string }{
		{"npm:tiny-weather@1.0.0", "1.0.0", "npm:tiny-weather"},
		{"npm:@scope/pkg@2.1.0-rc.1", "2.1.0-rc.1", "npm:@scope/pkg"},
		{"npm:@scope/pkg", "", ""},
		{"npm:tiny-weather", "", ""},
		{"pypi:mcp-server==0.3", "0.3", "pypi:mcp-server"},
		{"pypi:mcp-server", "", ""},
		{"cargo:x@1", "", ""},
	} {
		if v, k := specVersion(c.spec), specKey(c.spec); v != c.version || k != c.key {
			t.Errorf("%s: version %q key %q, want %q %q", c.spec, v, k, c.version, c.key)
		}
	}
}
