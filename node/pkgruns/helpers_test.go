package pkgruns

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/state"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/sandbox"
)

// fakeRuns is the crawl state's package runs in memory: the narrow Runs
// the part takes, without a store on disk.
type fakeRuns struct {
	mu       sync.Mutex
	targets  []state.Target
	last     map[string]state.PackageRun            // id → latest run
	versions map[string]map[string]state.PackageRun // id → version → run
}

func newFakeRuns(ts ...registry.Target) *fakeRuns {
	f := &fakeRuns{last: map[string]state.PackageRun{}, versions: map[string]map[string]state.PackageRun{}}
	for _, t := range ts {
		f.targets = append(f.targets, state.Target{Target: t})
	}
	return f
}

func (f *fakeRuns) Targets() ([]state.Target, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.targets), nil
}

func (f *fakeRuns) PackageRun(id string) (*state.PackageRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.last[id]
	if !ok {
		return nil, state.ErrNotFound
	}
	return &r, nil
}

func (f *fakeRuns) PackageVersion(id, version string) (*state.PackageRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.versions[id][version]
	if !ok {
		return nil, state.ErrNotFound
	}
	return &r, nil
}

func (f *fakeRuns) PackageVersions(id string, limit int) ([]state.PackageRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []state.PackageRun
	for _, r := range f.versions[id] {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b state.PackageRun) int { return b.ObservedAt.Compare(a.ObservedAt) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (f *fakeRuns) PutPackageRun(r state.PackageRun) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last[r.TargetID] = r
	if f.versions[r.TargetID] == nil {
		f.versions[r.TargetID] = map[string]state.PackageRun{}
	}
	f.versions[r.TargetID][r.Version] = r
	return nil
}

// recorded is one call of fakeRecorder.Record.
type recorded struct {
	target   registry.Target
	obs      *mcpclient.Observation
	run      state.PackageRun
	evidence []hlog.Evidence
}

// fakeRecorder keeps what the part asked to record and commits the run to
// its runs, as the crawler commits it with the labels' state.
type fakeRecorder struct {
	runs  *fakeRuns
	mu    sync.Mutex
	calls []recorded
}

func (r *fakeRecorder) Record(_ context.Context, t registry.Target, obs *mcpclient.Observation, run *state.PackageRun, extra ...hlog.Evidence) (*crawl.Summary, error) {
	r.mu.Lock()
	r.calls = append(r.calls, recorded{target: t, obs: obs, run: *run, evidence: extra})
	r.mu.Unlock()
	return &crawl.Summary{}, r.runs.PutPackageRun(*run)
}

// commits keeps the ids of each call of a Part's committed.
type commits struct{ ids [][]string }

func (c *commits) committed(_ context.Context, ids []string) { c.ids = append(c.ids, ids) }

// npmTarget is a package target of key (npm:<name>), listed without a version.
func npmTarget(id, key string) registry.Target {
	return registry.Target{ID: id, Name: "io.example/" + id, Endpoint: key, Transport: registry.TransportStdio}
}

// observation is a package observation of spec with status, as a worker
// sends it.
func observation(t *testing.T, spec string, status sandbox.Status) []byte {
	t.Helper()
	obs := sandbox.Observation{Type: sandbox.Type, Observer: "test", Registry: "npm", Package: spec,
		ObservedAt: "2025-01-02T03:04:05Z", Status: status, Seconds: 1.5}
	if status == sandbox.StatusOK {
		obs.Tools = []any{map[string]any{"name": "weather", "inputSchema": map[string]any{"type": "object"}}}
		obs.Behaviour.Complete = true
	}
	b, err := json.Marshal(obs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testPart is a Part over fakes with no queue: enough to handle results.
func testPart(runs *fakeRuns, rec *fakeRecorder, c *commits) *Part {
	return &Part{cfg: Settings{MaxJobsPerRound: DefaultMaxJobsPerRound, MaxResolvesPerRound: 4 * DefaultMaxJobsPerRound},
		log: slog.New(slog.DiscardHandler), st: runs, cr: rec, committed: c.committed,
		now: func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }}
}
