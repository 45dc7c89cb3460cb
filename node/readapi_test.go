package node

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/catalog/catalogtest"
	"github.com/histor-observer/histor/node/views"
)

// readNode is a test node serving the reading API over a catalogtest
// fixture.
type readNode struct {
	*testNode
	f *catalogtest.Fixture
	c *catalog.Catalog
}

func newReadNode(t *testing.T) *readNode {
	t.Helper()
	tn := newTestNode(t, 0)
	st := catalogtest.OpenStore(t, filepath.Join(t.TempDir(), "state"))
	f := catalogtest.Build(t, st, tn.node.Log())
	clock := func() time.Time { return catalogtest.Now }
	c, err := catalog.New(catalog.Options{Store: st, Log: tn.node.Log(), Patterns: scan.Default(), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := tn.node.SetReadAPI(ReadAPI{Catalog: c, PublicBase: "https://observer.example", CrawlInterval: 24 * time.Hour, Now: clock}); err != nil {
		t.Fatal(err)
	}
	return &readNode{tn, f, c}
}

// read GETs path, expects status and checks that the answer says nothing
// we may never say.
func (rn *readNode) read(t *testing.T, path string, status int) []byte {
	t.Helper()
	resp, body := rn.get(t, path)
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %d %s, want %d", path, resp.StatusCode, body, status)
	}
	if w := awr.ForbiddenWord(string(body)); w != "" {
		t.Errorf("GET %s says %q: %s", path, w, body)
	}
	if status == http.StatusOK && resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("GET %s: no CORS header", path)
	}
	if status >= 400 {
		var d struct{ Detail string }
		if json.Unmarshal(body, &d) != nil || d.Detail == "" {
			t.Errorf("GET %s: error without detail: %s", path, body)
		}
	}
	return body
}

func (rn *readNode) readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rn.read(t, path, http.StatusOK), &m); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return m
}

func hasMembers(t *testing.T, what string, m map[string]any, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, ok := m[n]; !ok {
			t.Errorf("%s lacks %q", what, n)
		}
	}
}

var summaryMembers = []string{"id", "name", "title", "endpoint", "transport", "version", "repository",
	"website", "delisted", "skipReason", "lastStatus", "lastDetail", "lastAttempt", "lastObserved",
	"toolCount", "subjectDigest", "toolSetDigest", "firstPinned", "unchangedSince", "observations",
	"attempts", "changes", "blockMatches", "adviseMatches", "recordMatches", "state", "badgeText"}

func TestServersList(t *testing.T) {
	rn := newReadNode(t)
	m := rn.readJSON(t, "/api/v1/servers")
	hasMembers(t, "servers answer", m, "total", "offset", "limit", "servers")
	if m["total"] != 4.0 || m["limit"] != 50.0 || m["offset"] != 0.0 {
		t.Errorf("total/limit/offset = %v/%v/%v", m["total"], m["limit"], m["offset"])
	}
	byID := map[string]map[string]any{}
	for _, s := range m["servers"].([]any) {
		row := s.(map[string]any)
		hasMembers(t, "summary", row, summaryMembers...)
		byID[row["id"].(string)] = row
	}
	f := rn.f
	for _, tc := range []struct {
		id, member string
		want       any
	}{
		{f.Changed, "state", "changed"},
		{f.Changed, "badgeText", "changed 2026-09-21"},
		{f.Changed, "changes", 1.0},
		{f.Changed, "adviseMatches", 1.0},
		{f.Stable, "state", "unchanged"},
		{f.Stable, "badgeText", "unchanged 30d · 09-23"},
		{f.Stable, "observations", 5.0},
		{f.Stable, "toolCount", 2.0},
		{f.Stable, "lastObserved", "2026-09-23T11:00:00Z"},
		{f.Unreachable, "lastStatus", "timeout"},
		{f.Unreachable, "lastDetail", "no answer within 10s"},
		{f.Unreachable, "toolSetDigest", nil},
		{f.Unreachable, "toolCount", nil},
		{f.Unreachable, "badgeText", "not observed"},
		{f.Skipped, "skipReason", "templated-url"},
		{f.Skipped, "state", "unknown"},
	} {
		if got := byID[tc.id][tc.member]; got != tc.want {
			t.Errorf("%s %s = %v, want %v", tc.id, tc.member, got, tc.want)
		}
	}
	if _, ok := byID[f.Delisted]; ok {
		t.Error("a delisted server is listed")
	}
}

func TestServersQuery(t *testing.T) {
	rn := newReadNode(t)
	for _, tc := range []struct {
		query  string
		status int
		total  float64
		rows   int
	}{
		{"state=pinned", 200, 2, 2},
		{"state=unobserved", 200, 2, 2},
		{"q=STABLE", 200, 1, 1},
		{"q=%20title+of+io.example%2Fch", 200, 1, 1},
		{"limit=1&offset=1", 200, 4, 1},
		{"offset=10000000", 200, 4, 0},
		{"limit=0", 400, 0, 0},
		{"limit=201", 400, 0, 0},
		{"limit=-1", 400, 0, 0},
		{"offset=10000001", 400, 0, 0},
		{"state=bogus", 400, 0, 0},
		{"q=" + strings.Repeat("é", 201), 400, 0, 0},
		{"q=a&q=b", 400, 0, 0},
		{"q=%zz", 400, 0, 0},
	} {
		body := rn.read(t, "/api/v1/servers?"+tc.query, tc.status)
		if tc.status != 200 {
			continue
		}
		var m struct {
			Total   float64
			Servers []any
		}
		json.Unmarshal(body, &m)
		if m.Total != tc.total || len(m.Servers) != tc.rows {
			t.Errorf("?%s: total %v, %d rows; want %v, %d", tc.query, m.Total, len(m.Servers), tc.total, tc.rows)
		}
	}
}

func TestServerPage(t *testing.T) {
	rn := newReadNode(t)
	m := rn.readJSON(t, "/api/v1/servers/"+rn.f.Changed)
	hasMembers(t, "server page", m, "server", "description", "descriptor", "patternMatches", "labels",
		"timeline", "changes", "clientReports", "tools")
	hasMembers(t, "page's server", m["server"].(map[string]any), summaryMembers...)
	if d, _ := m["descriptor"].(map[string]any); d["mtl"] != "1" {
		t.Errorf("descriptor = %v", m["descriptor"])
	}
	if tools, _ := m["tools"].([]any); len(tools) != 2 {
		t.Errorf("tools = %v", m["tools"])
	}
	matches, _ := m["patternMatches"].([]any)
	if !slices.ContainsFunc(matches, func(x any) bool {
		mm := x.(map[string]any)
		return mm["span"] == "you must" && mm["tool"] == "weather" && mm["where"] == "description"
	}) {
		t.Errorf("patternMatches = %v", matches)
	}
	labels := m["labels"].([]any)
	if len(labels) != 2 {
		t.Fatalf("labels = %v", labels)
	}
	hasMembers(t, "label", labels[0].(map[string]any), "id", "method", "verdict", "subject", "observed_at",
		"issued_at", "digest", "leaf_index", "methodShort")
	if labels[0].(map[string]any)["methodShort"] != "observation" {
		t.Errorf("methodShort = %v", labels[0].(map[string]any)["methodShort"])
	}
	tl := m["timeline"].([]any)
	if len(tl) != 2 || tl[0].(map[string]any)["from"] != "2026-09-21T12:00:00Z" {
		t.Errorf("timeline = %v", tl)
	}
	hasMembers(t, "timeline row", tl[0].(map[string]any), "from", "until", "count", "status", "detail",
		"toolSetDigest", "subjectDigest", "toolCount", "serverName", "serverVersion")
	if cs := m["changes"].([]any); len(cs) != 1 || cs[0].(map[string]any)["id"] != float64(rn.f.ChangeSeq) {
		t.Errorf("changes = %v", cs)
	}
	stable := rn.readJSON(t, "/api/v1/servers/"+rn.f.Stable)
	if cr := stable["clientReports"].([]any); len(cr) != 1 || cr[0].(map[string]any)["reports"] != 1.0 {
		t.Errorf("clientReports = %v", cr)
	}
	un := rn.readJSON(t, "/api/v1/servers/"+rn.f.Unreachable)
	if un["tools"] != nil || un["descriptor"] != nil || un["patternMatches"] != nil {
		t.Errorf("unreachable page: tools %v, descriptor %v, matches %v", un["tools"], un["descriptor"], un["patternMatches"])
	}
	if gone := rn.readJSON(t, "/api/v1/servers/"+rn.f.Delisted); gone["server"].(map[string]any)["delisted"] != true {
		t.Error("delisted server page does not say delisted")
	}
	rn.read(t, "/api/v1/servers/0000000000000000", http.StatusNotFound)
	rn.read(t, "/api/v1/servers/"+strings.Repeat("a", 300), http.StatusNotFound)
}

func TestChangesRoutes(t *testing.T) {
	rn := newReadNode(t)
	m := rn.readJSON(t, "/api/v1/changes")
	cs := m["changes"].([]any)
	if len(cs) != 1 {
		t.Fatalf("changes = %v", cs)
	}
	row := cs[0].(map[string]any)
	hasMembers(t, "change", row, "id", "target_id", "observed_at", "from_subject", "to_subject",
		"from_toolset", "to_toolset", "summary", "label_id", "name", "endpoint", "title")
	s := row["summary"].(map[string]any)
	hasMembers(t, "summary", s, "added", "removed", "modified", "detail")
	if row["id"] != float64(rn.f.ChangeSeq) || row["target_id"] != rn.f.Changed || row["observed_at"] != "2026-09-21T12:00:00Z" {
		t.Errorf("row = %v", row)
	}
	if fmt.Sprint(s["added"]) != "[forecast]" || s["modified"].([]any)[0].(map[string]any)["tool"] != "weather" {
		t.Errorf("summary = %v", s)
	}
	one := rn.readJSON(t, fmt.Sprintf("/api/v1/changes/%d", rn.f.ChangeSeq))
	if one["target_id"] != rn.f.Changed {
		t.Errorf("one change = %v", one)
	}
	if m := rn.readJSON(t, "/api/v1/changes?before=1"); len(m["changes"].([]any)) != 0 {
		t.Errorf("before=1: %v", m)
	}
	rn.read(t, "/api/v1/changes/999", http.StatusNotFound)
	for _, bad := range []string{"/api/v1/changes/01", "/api/v1/changes/x", "/api/v1/changes/0",
		"/api/v1/changes?limit=0", "/api/v1/changes?limit=201", "/api/v1/changes?before=0"} {
		rn.read(t, bad, http.StatusBadRequest)
	}
}

func TestStatsRoutes(t *testing.T) {
	rn := newReadNode(t)
	m := rn.readJSON(t, "/api/v1/stats")
	hasMembers(t, "stats", m, "generatedAt", "targets", "changes", "log", "clientReports", "crawl", "lastRun")
	targets := m["targets"].(map[string]any)
	if targets["listed"] != 4.0 || targets["pinned"] != 2.0 || targets["not_attempted"] != 1.0 || targets["servers"] != 4.0 {
		t.Errorf("targets = %v", targets)
	}
	if ch := m["changes"].(map[string]any); ch["last24h"] != 0.0 || ch["last7d"] != 1.0 || ch["last30d"] != 1.0 {
		t.Errorf("changes = %v", ch)
	}
	lg := m["log"].(map[string]any)
	hasMembers(t, "log", lg, "treeSize", "rootHash", "sthTimestamp")
	if lg["treeSize"] != float64(len(rn.f.LabelIDs)) {
		t.Errorf("log = %v", lg)
	}
	if m["clientReports"].(map[string]any)["last7d"] != 1.0 {
		t.Errorf("clientReports = %v", m["clientReports"])
	}
	crawl := m["crawl"].(map[string]any)
	hasMembers(t, "crawl", crawl, "running", "runningSince", "progress", "intervalSeconds", "lastError")
	if crawl["intervalSeconds"] != 86400.0 {
		t.Errorf("crawl = %v", crawl)
	}
	run := m["lastRun"].(map[string]any)
	hasMembers(t, "lastRun", run, "id", "startedAt", "finishedAt", "registryServers", "registryEndpoints",
		"notAttempted", "attempted", "statuses", "labelsIssued", "changes", "error")
	if run["id"] != 1.0 || run["attempted"] != 4.0 || run["notAttempted"].(map[string]any)["templated-url"] != 1.0 {
		t.Errorf("lastRun = %v", run)
	}
	h := rn.readJSON(t, "/api/v1/stats/hosts?limit=2")
	if len(h["hosts"].([]any)) != 2 || h["distinctHosts"] != 3.0 {
		t.Errorf("hosts = %v", h)
	}
	rn.read(t, "/api/v1/stats/hosts?limit=51", http.StatusBadRequest)
	rn.read(t, "/api/v1/stats/hosts?limit=0", http.StatusBadRequest)
}

// neverRed are the colours a badge must not use for a change: shields.io's
// red and its neighbours.
var neverRed = []string{"e05d44", "red", "ff0000", "d73a49", "cb2431", "b60205"}

func TestShields(t *testing.T) {
	rn := newReadNode(t)
	for _, tc := range []struct{ name, label, message, color string }{
		{"log", "labels in log", fmt.Sprint(len(rn.f.LabelIDs)), "5fe3ff"},
		{"pinned", "tool sets pinned", "2", "3a7bd5"},
		{"changes", "changes · 7d", "1", "c98a1b"},
		{"sth", "signed tree head", "3h ago", "2f9e77"},
	} {
		var sh views.Shield
		if err := json.Unmarshal(rn.read(t, "/api/v1/badges/"+tc.name, http.StatusOK), &sh); err != nil {
			t.Fatal(err)
		}
		if (sh != views.Shield{SchemaVersion: 1, Label: tc.label, Message: tc.message, Color: tc.color}) {
			t.Errorf("%s badge = %+v", tc.name, sh)
		}
		if slices.Contains(neverRed, strings.ToLower(sh.Color)) {
			t.Errorf("%s badge is red", tc.name)
		}
	}
	rn.read(t, "/api/v1/badges/nope", http.StatusNotFound)
}

func TestBadgeSVG(t *testing.T) {
	rn := newReadNode(t)
	for _, tc := range []struct{ id, message, color string }{
		{rn.f.Changed, "changed 2026-09-21", views.ColorChanged},
		{rn.f.Stable, "unchanged 30d · 09-23", views.ColorUnchanged},
		{rn.f.Unreachable, "not observed", views.ColorUnknown},
		{"0000000000000000", "not listed", views.ColorUnknown},
	} {
		resp, body := rn.get(t, "/badge/"+tc.id+".svg")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" {
			t.Fatalf("badge %s: %d %s", tc.id, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		svg := string(body)
		if !strings.Contains(svg, ">"+tc.message+"<") || !strings.Contains(svg, `fill="`+tc.color+`"`) {
			t.Errorf("badge %s: want %q in %s: %s", tc.id, tc.message, tc.color, svg)
		}
		for _, red := range neverRed {
			if strings.Contains(strings.ToLower(svg), red) {
				t.Errorf("badge %s is red: %s", tc.id, svg)
			}
		}
		if w := awr.ForbiddenWord(svg); w != "" {
			t.Errorf("badge %s says %q", tc.id, w)
		}
	}
	rn.read(t, "/badge/"+rn.f.Changed, http.StatusNotFound)
}

func TestFeed(t *testing.T) {
	rn := newReadNode(t)
	for _, tc := range []struct {
		query string
		items int
	}{
		{"", 1},
		{"?watch=" + rn.f.Changed, 1},
		{"?watch=" + rn.f.Stable + "," + rn.f.Changed, 1},
		{"?watch=" + rn.f.Stable, 0},
	} {
		resp, body := rn.get(t, "/feed.xml"+tc.query)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/atom+xml" {
			t.Fatalf("feed%s: %d %s", tc.query, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		feed, err := gofeed.NewParser().ParseString(string(body))
		if err != nil {
			t.Fatalf("feed%s does not parse: %v\n%s", tc.query, err, body)
		}
		if feed.FeedType != "atom" || len(feed.Items) != tc.items {
			t.Fatalf("feed%s: type %s, %d items", tc.query, feed.FeedType, len(feed.Items))
		}
		for _, it := range feed.Items {
			for _, text := range []string{it.Title, it.Description, it.Link, it.GUID} {
				if w := awr.ForbiddenWord(text); w != "" {
					t.Errorf("feed entry says %q: %s", w, text)
				}
			}
			if it.Title != "io.example/changed: tool definitions changed" ||
				it.Link != "https://observer.example/api/v1/servers/"+rn.f.Changed ||
				it.Description != "added: forecast; modified: weather — https://changed.example.com/mcp" ||
				it.UpdatedParsed == nil || !it.UpdatedParsed.Equal(catalogtest.Now.Add(-48*time.Hour)) {
				t.Errorf("entry = %q %q %q %v", it.Title, it.Link, it.Description, it.UpdatedParsed)
			}
		}
	}
	rn.read(t, "/feed.xml?watch=nothex", http.StatusBadRequest)
	rn.read(t, "/feed.xml?watch="+strings.TrimSuffix(strings.Repeat(rn.f.Stable+",", 101), ","), http.StatusBadRequest)
}

func TestEntriesTargetID(t *testing.T) {
	rn := newReadNode(t)
	var m struct {
		Entries []struct {
			ID       string  `json:"id"`
			TargetID *string `json:"target_id"`
		}
	}
	json.Unmarshal(rn.read(t, "/api/v1/log/entries", http.StatusOK), &m)
	if len(m.Entries) != len(rn.f.LabelIDs) {
		t.Fatalf("%d entries, want %d", len(m.Entries), len(rn.f.LabelIDs))
	}
	for _, e := range m.Entries {
		want, _ := rn.c.LabelTarget(e.ID)
		if e.TargetID == nil || *e.TargetID != want || want == "" {
			t.Errorf("entry %s target_id = %v, want %q", e.ID, e.TargetID, want)
		}
	}
}

// TestReadAPIBeforeAnyCrawl: a node that has not crawled yet answers the
// reading routes from an empty catalog, and its log entries name no target.
func TestReadAPIBeforeAnyCrawl(t *testing.T) {
	tn := newTestNode(t, 1)
	for p, want := range map[string]int{"/api/v1/servers": 200, "/api/v1/servers/0011223344556677": 404,
		"/api/v1/changes": 200, "/api/v1/stats": 200, "/api/v1/badges/log": 200, "/badge/0011223344556677.svg": 200, "/feed.xml": 200} {
		if resp, body := tn.get(t, p); resp.StatusCode != want {
			t.Errorf("GET %s before any crawl: %d %s, want %d", p, resp.StatusCode, body, want)
		}
	}
	var list struct {
		Total int `json:"total"`
	}
	_, body := tn.get(t, "/api/v1/servers")
	if err := json.Unmarshal(body, &list); err != nil || list.Total != 0 {
		t.Errorf("servers before any crawl: %s", body)
	}
	var m struct {
		Entries []struct {
			TargetID *string `json:"target_id"`
		}
	}
	_, body = tn.get(t, "/api/v1/log/entries")
	json.Unmarshal(body, &m)
	if len(m.Entries) != 1 || m.Entries[0].TargetID != nil {
		t.Errorf("entries of labels the crawl state does not know: %s", body)
	}
}
