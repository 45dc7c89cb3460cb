package node

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/node/desk/desktest"
	"github.com/histor-observer/histor/node/events"
)

// TestWords renders everything observer a of the populated world shows
// (every desk page, badge, feed entry and answer, the MCP face's tools and
// answers, the AIMarket routes with an invoke of each capability) and
// holds it to DESIGN's words: no page's visible text, title or alt text,
// no XML text or attribute, and no JSON string calls a server safe,
// secure, audited, certified, approved, trusted or verified.
func TestWords(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two observers with libp2p on loopback, crawls real MCP servers and forks a log; skipped under -short")
	}
	w := newWorld(t)
	awaitEvents(t, w, events.KindDefinitions, events.KindSplitView, events.KindEquivocation)
	s := &sweep{t: t, fn: w.a, labels: map[string]bool{}}
	ids, changes := s.ids()
	s.deskPages(w, ids, changes)
	s.deskCheck(w)
	for _, id := range ids {
		s.xml("/badge/" + id + ".svg")
	}
	for _, name := range []string{"log", "pinned", "changes", "sth"} {
		s.xml("/api/v1/badges/" + name)
	}
	s.xml("/feed.xml")
	s.xml("/security-feed.xml")
	s.answers(w, ids, changes)
	s.face(w)
	s.aimarket(w)
	if s.n < 40 {
		t.Errorf("the sweep read only %d documents", s.n)
	}
	t.Logf("%d documents, %d labels read", s.n, len(s.labels))
}

// sweep reads documents from one node and checks their words.
type sweep struct {
	t      *testing.T
	fn     *fedNode
	n      int             // documents read
	labels map[string]bool // label ids met in answers, each read once
}

func (s *sweep) do(method, path, ctype string, body []byte) []byte {
	s.t.Helper()
	status, out := s.from(s.fn, method, path, ctype, body)
	if status != http.StatusOK {
		s.t.Fatalf("%s %s: %d %s", method, path, status, out)
	}
	s.n++
	return out
}

func (s *sweep) from(fn *fedNode, method, path, ctype string, body []byte) (int, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(method, fn.url+path, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, out
}

// html checks a desk page with the desk's own linter (visible text,
// titles, alt texts, labels) and returns it.
func (s *sweep) html(method, path string, form url.Values) string {
	s.t.Helper()
	var body []byte
	if method == http.MethodPost {
		body = s.do(method, path, "application/x-www-form-urlencoded", []byte(form.Encode()))
	} else {
		body = s.do(method, path, "", nil)
	}
	for _, e := range desktest.Lint(body) {
		s.t.Errorf("%s %s: %v", method, path, e)
	}
	return string(body)
}

// xml checks every text and attribute of a feed or an SVG badge.
func (s *sweep) xml(path string) {
	s.t.Helper()
	d := xml.NewDecoder(bytes.NewReader(s.do(http.MethodGet, path, "", nil)))
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			s.t.Fatalf("%s: %v", path, err)
		}
		switch tok := tok.(type) {
		case xml.CharData:
			s.word(path, string(tok))
		case xml.StartElement:
			for _, a := range tok.Attr {
				s.word(path+" @"+a.Name.Local, a.Value)
			}
		}
	}
}

func (s *sweep) word(where, text string) {
	s.t.Helper()
	if w := awr.ForbiddenWord(text); w != "" {
		s.t.Errorf("%s says %q in %q", where, w, text)
	}
}

// json checks every string of an answer, member names included, and
// notes the label ids it cites.
func (s *sweep) json(where string, b []byte) any {
	s.t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		s.t.Fatalf("%s: %v: %s", where, err, b)
	}
	s.walk(where, "", v)
	return v
}

func (s *sweep) walk(where, key string, v any) {
	switch v := v.(type) {
	case string:
		s.word(where, v)
		if key == "labelId" && strings.HasPrefix(v, "urn:uuid:") {
			s.labels[v] = true
		}
	case []any:
		for _, e := range v {
			s.walk(where, key, e)
		}
	case map[string]any:
		for k, e := range v {
			s.word(where, k)
			s.walk(where, k, e)
		}
	}
}

func (s *sweep) getJSON(path string) any {
	s.t.Helper()
	return s.json("GET "+path, s.do(http.MethodGet, path, "", nil))
}

func (s *sweep) postJSON(path string, body any) any {
	s.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		s.t.Fatal(err)
	}
	return s.json("POST "+path, s.do(http.MethodPost, path, "application/json", b))
}

// ids are every server a lists and every change it recorded.
func (s *sweep) ids() (servers []string, changes []string) {
	s.t.Helper()
	var sp struct {
		Servers []struct {
			ID string `json:"id"`
		} `json:"servers"`
	}
	var cp struct {
		Changes []struct {
			ID json.Number `json:"id"`
		} `json:"changes"`
	}
	getInto(s.t, s.fn, "/api/v1/servers?limit=200", &sp)
	getInto(s.t, s.fn, "/api/v1/changes?limit=200", &cp)
	for _, x := range sp.Servers {
		servers = append(servers, x.ID)
	}
	for _, c := range cp.Changes {
		changes = append(changes, c.ID.String())
	}
	if len(servers) < 3 || len(changes) < 1 {
		s.t.Fatalf("a lists %d servers and %d changes, want at least 3 and 1", len(servers), len(changes))
	}
	return servers, changes
}

// deskPages renders every desk route, and checks the world is in them.
func (s *sweep) deskPages(w *world, ids, changes []string) {
	s.t.Helper()
	want := map[string][]string{
		"/":                    {weatherName, notesName},
		"/servers?state=split": {twoFacedName},
		"/changes":             {weatherName},
		"/s/" + w.notes.id():   {"<mark>"},
		"/network":             {"Witness policy: ", w.forkedLog.origin, w.b.origin},
		"/log":                 {w.a.origin},
		"/about":               {w.a.origin},
		"/check":               {`name="tools"`},
	}
	paths := []string{"/", "/servers", "/servers?state=split", "/servers?state=changed", "/changes", "/check", "/log", "/network", "/about"}
	for _, id := range ids {
		paths = append(paths, "/s/"+id)
	}
	for _, c := range changes {
		paths = append(paths, "/changes/"+c)
	}
	for _, p := range paths {
		page := s.html(http.MethodGet, p, nil)
		for _, x := range want[p] {
			if !strings.Contains(page, x) {
				s.t.Errorf("GET %s lacks %q", p, x)
			}
		}
	}
}

// deskCheck posts the check form with the tools each server shows a.
func (s *sweep) deskCheck(w *world) {
	s.t.Helper()
	for _, ws := range []*worldServer{w.weather, w.twoFaced, w.notes} {
		tools, err := json.Marshal(map[string]any{"tools": listTools(s.t, ws.endpoint)})
		if err != nil {
			s.t.Fatal(err)
		}
		s.html(http.MethodPost, "/check", url.Values{"endpoint": {ws.endpoint}, "tools": {string(tools)}})
	}
}

// listTools is the tools array a client of endpoint reads from tools/list.
func listTools(t *testing.T, endpoint string) []*mcp.Tool {
	t.Helper()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "words-test", Version: "1"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	res, err := sess.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

// answers reads the JSON API: every server and change, /check for each
// server, the events, the evidence, the issuer and the labels cited.
func (s *sweep) answers(w *world, ids, changes []string) {
	s.t.Helper()
	for _, p := range []string{"/api/v1/servers", "/api/v1/servers?state=split", "/api/v1/changes", "/api/v1/security-events",
		"/api/v1/evidence", "/api/v1/issuer", "/api/v1/stats", "/health"} {
		s.getJSON(p)
	}
	// The census comes with the sandbox part; read it where the node has it.
	if status, body := s.from(s.fn, http.MethodGet, "/api/v1/census", "", nil); status == http.StatusOK {
		s.n++
		s.json("GET /api/v1/census", body)
	} else {
		s.t.Logf("/api/v1/census answers %d; not swept", status)
	}
	for _, id := range ids {
		s.getJSON("/api/v1/servers/" + id)
	}
	for _, c := range changes {
		s.getJSON("/api/v1/changes/" + c)
	}
	for _, ws := range []*worldServer{w.weather, w.twoFaced, w.notes} {
		s.postJSON("/api/v1/check", map[string]any{"endpoint": ws.endpoint, "tools": listTools(s.t, ws.endpoint)})
	}
	labels := slices.Sorted(func(yield func(string) bool) {
		for id := range s.labels {
			if !yield(id) {
				return
			}
		}
	})
	// A label cited by a peer's observation is in the peer's log.
	for _, id := range labels {
		status, body := s.from(w.a, http.MethodGet, "/api/v1/labels/"+id, "", nil)
		if status == http.StatusNotFound {
			status, body = s.from(w.b, http.MethodGet, "/api/v1/labels/"+id, "", nil)
		}
		if status != http.StatusOK {
			s.t.Fatalf("label %s: %d %s", id, status, body)
		}
		s.n++
		s.json("label "+id, body)
	}
}

// face lists the MCP face's tools and calls each one.
func (s *sweep) face(w *world) {
	s.t.Helper()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "words-test", Version: "1"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.fn.url + "/mcp"}, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	defer sess.Close()
	list, err := sess.ListTools(ctx, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	b, _ := json.Marshal(list)
	s.json("/mcp tools/list", b)
	s.n++
	args := map[string]any{
		"check":   map[string]any{"endpoint": w.twoFaced.endpoint, "tools": listTools(s.t, w.twoFaced.endpoint)},
		"server":  map[string]any{"id": w.twoFaced.id()},
		"changes": map[string]any{"limit": 20},
	}
	for _, tl := range list.Tools {
		a, ok := args[tl.Name]
		if !ok {
			s.t.Errorf("the face offers %s, which this sweep does not call", tl.Name)
			continue
		}
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tl.Name, Arguments: a})
		if err != nil || res.IsError {
			s.t.Fatalf("/mcp %s: %+v, %v", tl.Name, res, err)
		}
		for _, content := range res.Content {
			s.json("/mcp "+tl.Name, []byte(content.(*mcp.TextContent).Text))
		}
		s.n++
	}
}

// aimarket reads the peer's documents and invokes each capability.
func (s *sweep) aimarket(w *world) {
	s.t.Helper()
	s.getJSON("/.well-known/ai-market.json")
	manifest := s.getJSON("/ai-market/v2/manifest")
	for _, q := range []string{"", "?q=check", "?q=server"} {
		s.getJSON("/ai-market/v2/search" + q)
	}
	inputs := map[string]any{
		"histor.check@v1":   map[string]any{"endpoint": w.twoFaced.endpoint, "tools": listTools(s.t, w.twoFaced.endpoint)},
		"histor.server@v1":  map[string]any{"name": twoFacedName},
		"histor.changes@v1": map[string]any{"limit": 20},
	}
	caps := capabilities(manifest)
	if len(caps) != len(inputs) {
		s.t.Errorf("the manifest offers %v, want %d capabilities", caps, len(inputs))
	}
	for _, c := range caps {
		in, ok := inputs[c]
		if !ok {
			s.t.Errorf("the manifest offers %s, which this sweep does not invoke", c)
			continue
		}
		s.postJSON("/ai-market/v2/invoke", map[string]any{"capability_id": c, "input": in})
	}
}

// capabilities are the capability ids a manifest lists, wherever it
// lists them.
func capabilities(v any) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			if id, ok := v["capability_id"].(string); ok && !slices.Contains(out, id) {
				out = append(out, id)
			}
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	slices.Sort(out)
	return out
}
