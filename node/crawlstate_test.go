package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/catalog/catalogtest"
)

// newStoreNode is a test node whose reading API serves a crawl state
// holding exactly what fill writes into it.
func newStoreNode(t *testing.T, fill func(st *state.Store)) *readNode {
	t.Helper()
	tn := newTestNode(t, 0)
	st := catalogtest.OpenStore(t, filepath.Join(t.TempDir(), "state"))
	fill(st)
	clock := func() time.Time { return catalogtest.Now }
	c, err := catalog.New(catalog.Options{Store: st, Log: tn.node.Log(), Patterns: scan.Default(), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := tn.node.SetReadAPI(ReadAPI{Catalog: c, PublicBase: "https://observer.example", CrawlInterval: 24 * time.Hour, Now: clock}); err != nil {
		t.Fatal(err)
	}
	return &readNode{testNode: tn, c: c}
}

// TestChangeSubjects: a change row serves the subject digests the crawl
// recorded as from_subject and to_subject, and a record stored before
// they were kept reads with both null.
func TestChangeSubjects(t *testing.T) {
	const (
		fromSubj = "sha256-nNR6utZJHl/EpVoffkzaYj4kA7LbJOig5Yz91lk6k1s="
		toSubj   = "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
	)
	tg := registry.Target{ID: "00112233445566ff", Name: "io.example/s", Endpoint: "https://s.example/mcp", Transport: "streamable-http"}
	rn := newStoreNode(t, func(st *state.Store) {
		at := catalogtest.Now.Add(-time.Hour)
		old := json.RawMessage(`{"id":"aa","targetId":"` + tg.ID + `","name":"n","endpoint":"e","before":"","after":"","at":"` +
			at.Add(-time.Hour).Format(time.RFC3339) + `","summary":{"added":[],"removed":[],"modified":[],"detail":"names-only"}}`)
		var oldChange state.Change
		if err := json.Unmarshal(old, &oldChange); err != nil {
			t.Fatal(err)
		}
		for _, u := range []state.Update{
			{Target: &state.Target{Target: tg, Status: "ok"}, Change: &oldChange},
			{Change: &state.Change{ID: "bb", TargetID: tg.ID, Name: tg.Name, Endpoint: tg.Endpoint, At: at,
				FromSubject: fromSubj, ToSubject: toSubj, Summary: json.RawMessage(`{}`)}},
		} {
			if err := st.Commit(u); err != nil {
				t.Fatal(err)
			}
		}
	})
	for seq, want := range map[string][2]any{"1": {nil, nil}, "2": {fromSubj, toSubj}} {
		row := rn.readJSON(t, "/api/v1/changes/"+seq)
		if got := [2]any{row["from_subject"], row["to_subject"]}; got != want {
			t.Errorf("change %s: subjects %v, want %v", seq, got, want)
		}
	}
}

// TestServerRegistryText: the registry's description, repository and
// website, as harvested, are served in the server summary and page; a
// target without them reads null.
func TestServerRegistryText(t *testing.T) {
	with := registry.Target{ID: "00112233445566aa", Name: "io.example/with", Endpoint: "https://w.example/mcp", Transport: "streamable-http",
		Description: "Reads the weather.", Repository: "https://github.com/example/with", Website: "https://w.example"}
	without := registry.Target{ID: "00112233445566bb", Name: "io.example/without", Endpoint: "https://o.example/mcp", Transport: "streamable-http"}
	rn := newStoreNode(t, func(st *state.Store) {
		if err := st.PutTargets([]state.Target{{Target: with, Status: "ok"}, {Target: without, Status: "ok"}}); err != nil {
			t.Fatal(err)
		}
	})
	for _, tc := range []struct {
		tg                  registry.Target
		desc, repo, website any
	}{
		{with, with.Description, with.Repository, with.Website},
		{without, nil, nil, nil},
	} {
		page := rn.readJSON(t, "/api/v1/servers/"+tc.tg.ID)
		s := page["server"].(map[string]any)
		if page["description"] != tc.desc || s["repository"] != tc.repo || s["website"] != tc.website {
			t.Errorf("%s: description %v, repository %v, website %v", tc.tg.Name, page["description"], s["repository"], s["website"])
		}
	}
}

// TestStatsLastRun: lastRun serves the run's distinct servers and its
// labels by short method name, as HISTOR's registryServers and
// labelsIssued; a run recorded before they were kept reads null and {}.
func TestStatsLastRun(t *testing.T) {
	two := 2
	for _, tc := range []struct {
		name    string
		run     state.Run
		servers any
		labels  string
	}{
		{"current", state.Run{Targets: 3, RegistryServers: &two, Labels: 5, ByMethod: map[string]int{
			awr.MethodObservation: 2, awr.MethodPatternScan: 2, awr.MethodContinuity: 1}},
			2.0, "map[tool-def-pattern-scan:2 tool-set-continuity:1 tool-set-observation:2]"},
		{"older record", state.Run{Targets: 3, Labels: 5}, nil, "map[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run.Started, tc.run.Ended = catalogtest.Now.Add(-time.Hour), catalogtest.Now
			rn := newStoreNode(t, func(st *state.Store) {
				if err := st.AddRun(tc.run); err != nil {
					t.Fatal(err)
				}
			})
			run := rn.readJSON(t, "/api/v1/stats")["lastRun"].(map[string]any)
			if run["registryServers"] != tc.servers || fmt.Sprint(run["labelsIssued"]) != tc.labels {
				t.Errorf("registryServers %v, labelsIssued %v; want %v, %s", run["registryServers"], run["labelsIssued"], tc.servers, tc.labels)
			}
		})
	}
}

// TestStatsOfFreshNodeConform: before its first crawl and its first label
// a node answers /api/v1/stats without lastRun and without the log's
// rootHash and sthTimestamp, as HISTOR does, and the answer still
// conforms to the OpenAPI document the node serves.
func TestStatsOfFreshNodeConform(t *testing.T) {
	rn := newStoreNode(t, func(*state.Store) {})
	resp, body := rn.get(t, "/api/v1/stats")
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if _, has := m["lastRun"]; has || fmt.Sprint(m["log"]) != "map[treeSize:0]" {
		t.Fatalf("fresh node's stats %s", body)
	}
	doc, err := libopenapi.NewDocument(openapiDoc)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if ok, errs := v.ValidateHttpResponse(resp.Request, resp); !ok {
		for _, e := range errs {
			t.Errorf("%s: %s", e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  at %s: %s", se.FieldPath, se.Reason)
			}
		}
	}
}
