package crawl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/registry/registrytest"
	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/crawl/state"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/mtl"
)

// oneTarget is a registry listing one streamable-HTTP endpoint.
func oneTarget(t *testing.T, url string) string {
	t.Helper()
	return registrytest.Server(t, []registrytest.Entry{
		{Name: "io.example/t", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: url}}},
	}).URL
}

// onlyTarget is the stored state of the one target of a test.
func (e *env) onlyTarget(t *testing.T) state.Target {
	t.Helper()
	targets, err := e.st.Targets()
	if err != nil || len(targets) != 1 {
		t.Fatalf("targets %v, %v", targets, err)
	}
	return targets[0]
}

// TestLongRefusalReasonIsClipped: a refusal whose wording quotes a tool
// name of 40,000 bytes (two tools share it) still gets its observation
// label, with the reason's detail clipped.
func TestLongRefusalReasonIsClipped(t *testing.T) {
	e := newEnv(t)
	name := strings.Repeat("n", 40000)
	tool := fmt.Sprintf(`{"name":%q,"description":"Does a thing.","inputSchema":{"type":"object"}}`, name)
	reg := oneTarget(t, serve(t, rawMCP("["+tool+","+tool+"]")).URL+"/mcp")
	sum := e.run(t, e.crawler(t, reg, nil))
	if sum.ByStatus["ok"] != 1 || sum.Errors != 0 {
		t.Fatalf("statuses %v, %d errors", sum.ByStatus, sum.Errors)
	}
	obs := byMethod(e.labels(t), awr.MethodObservation)
	if len(obs) != 1 {
		t.Fatalf("%d observation labels, want 1", len(obs))
	}
	raw, _ := e.log.Entry(obs[0].index)
	reasons, _ := obs[0].subject["mcpTrustLabel"].(map[string]any)["reasons"].([]any)
	if len(raw) > crawl.MaxLabelBytes || len(reasons) != 1 {
		t.Fatalf("observation label of %d bytes with reasons %.300v", len(raw), reasons)
	}
	if d := reasons[0].(map[string]any)["detail"].(string); len(d) > crawl.MaxReasonDetailBytes || !strings.HasSuffix(d, "…") {
		t.Errorf("reason detail of %d bytes, want at most %d ending in …", len(d), crawl.MaxReasonDetailBytes)
	}
}

// TestLabelFailureCountsAsInternalError: when a target's labels cannot be
// issued (its stored tool set is missing from the log) the summary and the
// stored target both say internal-error, not the server's "ok".
func TestLabelFailureCountsAsInternalError(t *testing.T) {
	e := newEnv(t)
	sw := &switchable{a: stateless(toolServer(baseTools)), b: stateless(toolServer(map[string]string{"other": "Does another thing."}))}
	reg := oneTarget(t, serve(t, sw).URL+"/mcp")
	e.run(t, e.crawler(t, reg, nil))
	obs, err := e.st.Observation(e.onlyTarget(t).ID)
	if err != nil {
		t.Fatal(err)
	}
	obs.ToolSetDigest = mtl.SRI([]byte("a tool set the log never held"))
	if err := e.st.Commit(state.Update{Observation: obs}); err != nil {
		t.Fatal(err)
	}
	sw.which.Store(1)
	e.clock.advance(time.Hour)
	sum := e.run(t, e.crawler(t, reg, nil))
	checkInternalError(t, e, sum)
}

// TestAppendFailureCountsAsInternalError: when a target's labels cannot be
// appended (even on their own), the summary and the stored target both say
// internal-error.
func TestAppendFailureCountsAsInternalError(t *testing.T) {
	e := newEnv(t)
	reg := oneTarget(t, serve(t, stateless(toolServer(baseTools))).URL+"/mcp")
	c := e.crawler(t, reg, nil)
	if err := e.log.Close(); err != nil {
		t.Fatal(err)
	}
	sum, err := c.Run(context.Background())
	if !errors.Is(err, hlog.ErrClosed) || sum == nil {
		t.Fatalf("crawl over a closed log: %v", err)
	}
	checkInternalError(t, e, sum)
}

func checkInternalError(t *testing.T, e *env, sum *crawl.Summary) {
	t.Helper()
	if sum.ByStatus[crawl.StatusInternalError] != 1 || sum.ByStatus["ok"] != 0 || sum.Errors != 1 || sum.Labels != 0 {
		t.Errorf("summary: statuses %v, %d errors, %d labels", sum.ByStatus, sum.Errors, sum.Labels)
	}
	if tg := e.onlyTarget(t); tg.Status != crawl.StatusInternalError || tg.Detail == "" {
		t.Errorf("stored target: status %q (%s), want %s", tg.Status, tg.Detail, crawl.StatusInternalError)
	}
}

// TestResponseHeaderOverBound: a server whose response header is over
// MaxResponseHeaderBytes ends as too-large with a short detail.
func TestResponseHeaderOverBound(t *testing.T) {
	e := newEnv(t)
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Pad", strings.Repeat("a", 32<<10)) // under the default, over the bound set
	}))
	reg := oneTarget(t, srv.URL+"/mcp")
	sum := e.run(t, e.crawler(t, reg, func(c *crawl.Config) { c.MaxResponseHeaderBytes = 16 << 10 }))
	if sum.ByStatus["too-large"] != 1 {
		t.Fatalf("statuses %v, want one too-large", sum.ByStatus)
	}
	if tg := e.onlyTarget(t); tg.Status != "too-large" || len(tg.Detail) > 512 {
		t.Errorf("stored target: %q, detail of %d bytes", tg.Status, len(tg.Detail))
	}
}

// instructed is rawMCP whose discovery answer also carries instructions.
func instructed(instructions string, toolsJSON string) http.Handler {
	tools := rawMCP(toolsJSON)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &capture{header: http.Header{}}
		tools.ServeHTTP(rec, r)
		body := rec.body.String()
		if strings.Contains(body, `"supportedVersions"`) {
			body = strings.Replace(body, `"capabilities":`, fmt.Sprintf(`"instructions":%q,"capabilities":`, instructions), 1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	})
}

type capture struct {
	header http.Header
	body   strings.Builder
}

func (c *capture) Header() http.Header         { return c.header }
func (c *capture) Write(b []byte) (int, error) { return c.body.Write(b) }
func (c *capture) WriteHeader(int)             {}

// TestInstructionsStoredBounded: of 1 MiB of instructions the state keeps
// only what the scan reads (BytesPerText+1 bytes, to the next rune), still
// valid UTF-8, and a re-scan of the stored prefix under a larger bound still
// says the scan was truncated.
func TestInstructionsStoredBounded(t *testing.T) {
	e := newEnv(t)
	lim := scan.DefaultLimits
	text := strings.Repeat("é", 512<<10) // 1 MiB; the cut falls inside a rune
	sw := &switchable{a: instructed(text, `[{"name":"t","description":"Does a thing.","inputSchema":{"type":"object"}}]`)}
	reg := oneTarget(t, serve(t, sw).URL+"/mcp")
	e.run(t, e.crawler(t, reg, func(c *crawl.Config) { c.ScanLimits = lim }))
	obs, err := e.st.Observation(e.onlyTarget(t).ID)
	if err != nil || obs.Instructions == nil {
		t.Fatalf("observation %+v, %v", obs, err)
	}
	if n := len(*obs.Instructions); n <= lim.BytesPerText || n > lim.BytesPerText+4 || !strings.HasPrefix(text, *obs.Instructions) || !obs.InstructionsClipped {
		t.Fatalf("stored %d bytes of instructions (clipped %v), want %d to %d, a prefix of what was sent",
			n, obs.InstructionsClipped, lim.BytesPerText+1, lim.BytesPerText+4)
	}
	sw.which.Store(2)
	e.clock.advance(time.Hour)
	before := len(e.labels(t))
	bigger := lim
	bigger.BytesPerText, bigger.BytesPerTool, bigger.BytesTotal = 4<<20, 4<<20, 8<<20
	e.run(t, e.crawler(t, reg, func(c *crawl.Config) {
		c.ScanLimits = bigger
		c.PatternSetFile = editedPatternSet(t, e, "bounds")
	}))
	scans := byMethod(e.labels(t)[before:], awr.MethodPatternScan)
	if len(scans) != 1 || scans[0].verdict != awr.VerdictInconclusive {
		t.Fatalf("re-scan labels %v, want one inconclusive", scans)
	}
}

// editedPatternSet writes the shipped pattern set under a new version (its
// version with "-"+tag appended), so a crawl with it re-issues every current
// subject's scan label, and returns the file's path.
func editedPatternSet(t *testing.T, e *env, tag string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "configs", "pattern-set.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["version"] = doc["version"].(string) + "-" + tag
	delete(doc, "digest")
	edited, _ := json.Marshal(doc)
	file := filepath.Join(e.dir, "pattern-set-"+tag+".json")
	if err := os.WriteFile(file, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
