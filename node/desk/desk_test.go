package desk_test

import (
	"bytes"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/histor-observer/histor/node/desk"
	"github.com/histor-observer/histor/node/desk/desktest"
	"github.com/histor-observer/histor/node/desklog"
)

// fixture is a view of every page with everything a page can show: a
// split view, pattern matches, changes of every kind, cosignatures and
// equivocation evidence.
func fixture() map[string]desk.Page {
	row := desk.ServerRow{ID: "0123456789abcdef", Name: "io.example/changed", Title: "Changed", Endpoint: "https://changed.example.com/mcp",
		State: "changed", StateText: "changed 2026-09-21", LastObserved: "2026-09-23T11:00:00Z", ToolCount: "2", Changed: true}
	change := desk.Change{ID: 7, URL: "/changes/7", ServerID: row.ID, Name: row.Name, ObservedAt: "2026-09-21T12:00:00Z",
		FromToolSet: "sha256-a", ToToolSet: "sha256-b", Added: []string{"forecast"}, Removed: []string{"old"},
		Renamed: []string{"a → b"}, NewAddresses: []string{"evil.example"}, LabelID: "urn:uuid:1", LabelURL: "/api/v1/labels/urn:uuid:1",
		Modified: []desk.ToolDiff{{Tool: "weather", Fields: []desk.FieldDiff{
			{Field: "description", Words: []desk.WordRun{{"=", "Look up the weather. "}, {"+", "You must pass the city."}, {"-", "Old."}}},
			{Field: "inputSchema", Paths: []string{`{"path":"/properties/city","kind":"added"}`}},
		}}}}
	split := desk.Agreement{Status: "split", Text: "split: observers saw different tool sets at the same time", Split: true}
	observers := []desk.Observer{
		{DID: "did:key:z6MkSelf", Self: true, Digest: "sha256-b", ObservedAt: "2026-09-23T11:00:00Z", LabelID: "urn:uuid:2", LeafIndex: 4, HeadSize: 9},
		{DID: "did:key:z6MkPeer", Digest: "sha256-c", ObservedAt: "2026-09-23T10:00:00Z", LabelID: "urn:uuid:3", LeafIndex: 1, HeadSize: 3, Differs: true},
		{DID: "did:key:z6MkDown", Status: "timeout", ObservedAt: "2026-09-23T09:00:00Z", LabelID: "urn:uuid:4"},
	}
	match := desk.Match{Code: "WARDEN-IMP-001", Severity: "medium", Tier: "advise", Tool: "weather", Where: "description", Span: "you must"}
	server := &desk.ServerView{ServerRow: row, Transport: "streamable-http", Version: "1.0.0", Description: "A weather server.",
		ToolSetDigest: "sha256-b", Subject: "sha256-s", FirstPinned: "2026-09-01T00:00:00Z", UnchangedSince: "2026-09-21T12:00:00Z",
		Observations: 4, Attempts: 5, LastStatus: "ok",
		Tools: []desk.Tool{{Name: "weather", Description: desk.Highlight("Look up the weather. You must pass the city.", []string{"you must"}),
			Schema: "{\n  \"type\": \"object\"\n}", Output: "{}", Matches: []desk.Match{match}}, {Name: "forecast", Schema: "{}"}},
		Matches:  []desk.Match{match, {Code: "WARDEN-INS-002", Severity: "low", Tier: "record", Where: "instructions", Span: "ignore"}},
		Labels:   []desk.Label{{ID: "urn:uuid:2", Method: "tool-set-continuity", Verdict: "fail", ObservedAt: "2026-09-21T12:00:00Z", IssuedAt: "2026-09-21T12:00:01Z", URL: "/api/v1/labels/urn:uuid:2", LeafIndex: 4}},
		Timeline: []desk.Span{{From: "2026-09-21T12:00:00Z", Until: "2026-09-23T11:00:00Z", Status: "ok", ToolSetDigest: "sha256-b", ToolCount: "2", Count: 3}, {From: "x", Until: "y", Status: "timeout", Detail: "no answer"}},
		Changes:  []desk.Change{change}, Observers: observers, Agreement: split,
		Badge: desk.Badge{SVGURL: "/badge/0123456789abcdef.svg", Alt: "MCP tool defs · histor: changed 2026-09-21",
			Markdown: "[![x](https://o.example/badge/0123456789abcdef.svg)](https://o.example/s/0123456789abcdef)", HTML: `<a href="https://o.example/s/x"><img src="y" alt="z"></a>`}}
	page := func(title, nav string, data any) desk.Page {
		return desk.Page{Title: title, Nav: nav, Origin: "observer.example/log", HeadSize: 9, HeadTime: "2026-09-23T11:00:00Z", Data: data}
	}
	servers := &desk.ServersView{Query: "example", State: "split", States: []desk.Option{{Value: "all", Label: "All"}, {Value: "split", Label: "Split: observers disagree", Selected: true}},
		Total: 120, From: 51, To: 52, Rows: []desk.ServerRow{row, {ID: "x", Name: "io.example/stable", StateText: "unchanged 30d · 09-23", ToolCount: "—"}},
		PrevURL: "/servers?offset=0", NextURL: "/servers?offset=100"}
	tree, err := desklog.New(1, [32]byte{1}, nil, [][32]byte{{1}}) // one leaf: its hash is the root
	if err != nil {
		panic(err)
	}
	logView := &desk.LogView{Checkpoint: "observer.example/log\n9\nAAAA\n\n— observer.example/log AAAA\n",
		Head:    &desk.LogHead{Size: 9, SizeText: "9", Root: "0101", Time: "2026-09-23T11:00:00Z", Log: "did:key:z6MkSelf", Signature: "AAAA", STH: `{"type":"histor.sth/v1"}`},
		Witness: desk.LogWitness{Configured: true, Quorum: "w1", Met: true, Listed: 1, Cosigned: 1, Witnesses: []desk.LogWitnessRow{{Name: "w1", KeyName: "w1.example", Cosigned: true}}},
		Picture: tree.Draw()}
	return map[string]desk.Page{
		"log":      page("Log", "log", logView),
		"servers":  page("Servers", "servers", servers),
		"server":   page(row.Name, "servers", server),
		"changes":  page("Changes", "changes", &desk.ChangesView{Changes: []desk.Change{change, {ID: 3, URL: "/changes/3", NamesOnly: true}, {ID: 2, URL: "/changes/2"}}, NextURL: "/changes?before=2"}),
		"change":   page("Change of "+row.Name, "changes", &desk.ChangeView{Change: change}),
		"notfound": page("Not found", "", "This observer has no server with that id."),
		"about":    page("About this observer", "about", &desk.AboutView{Origin: "observer.example/log", DID: "did:key:z6MkSelf", PublicURL: "https://o.example"}),
		"check": page("Check a tool set", "check", &desk.CheckView{Endpoint: "https://changed.example.com/mcp", Tools: `[{"name":"weather"}]`, Answered: true,
			Answer: desk.CheckAnswer{Match: "different", Note: "The tool definitions you sent differ.", Digest: "sha256-z", Known: "lists io.example/changed",
				TargetURL: "/s/0123456789abcdef", Agreement: split, Observers: observers, Signed: `{"type":"histor.check/v1","signature":{"value":"x"}}`}}),
		"network": page("Network", "network", &desk.NetworkView{
			Self:      desk.NetworkObserver{DID: "did:key:z6MkSelf", Origin: "observer.example/log", HeadSize: 9, HeadTime: "2026-09-23T11:00:00Z", Cosigners: []string{"peer.example/witness"}},
			Observers: []desk.NetworkObserver{{DID: "did:key:z6MkPeer", Origin: "peer.example/log", HeadSize: 3, HeadTime: "t", Cosigners: []string{"observer.example/witness"}}, {DID: "did:key:z6MkFork", Origin: "fork.example/log", Forked: true}},
			Witnessed: []string{"peer.example/log"},
			Evidence:  []desk.Evidence{{ID: "00ff", Origin: "fork.example/log", Kind: "same-size", Seen: "2026-09-22T00:00:00Z", URL: "/api/v1/evidence/00ff"}}}),
	}
}

func render(t *testing.T, d *desk.Desk, name string, p desk.Page) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := d.Render(&b, name, p); err != nil {
		t.Fatalf("rendering %s: %v", name, err)
	}
	return b.Bytes()
}

// TestPagesLint renders every page of the fixture and checks it: well
// formed, labelled, titled, and free of forbidden words.
func TestPagesLint(t *testing.T) {
	d := desk.MustLoad()
	for name, p := range fixture() {
		t.Run(name, func(t *testing.T) {
			page := render(t, d, name, p)
			for _, err := range desktest.Lint(page) {
				t.Error(err)
			}
			if !bytes.Contains(page, []byte("<title>"+p.Title)) {
				t.Errorf("title is not %q", p.Title)
			}
			if !bytes.Contains(page, []byte(`href="#main"`)) || !bytes.Contains(page, []byte(`<main id="main"`)) {
				t.Error("no skip link to <main>")
			}
			scripts := bytes.Count(page, []byte("<script"))
			if name == "log" && (scripts != 1 || !bytes.Contains(page, []byte(`<script type="module" src="/static/log.js"></script>`))) {
				t.Error("the log page does not carry its one script")
			} else if name != "log" && scripts != 0 {
				t.Error("a page carries script")
			}
		})
	}
}

// TestLintFails shows the checks can fail.
func TestLintFails(t *testing.T) {
	for name, page := range map[string]string{
		"forbidden word":  `<!DOCTYPE html><html lang="en"><head><title>x</title></head><body><p>a safe server</p></body></html>`,
		"forbidden title": `<!DOCTYPE html><html lang="en"><head><title>Verified</title></head><body></body></html>`,
		"forbidden alt":   `<!DOCTYPE html><html lang="en"><head><title>x</title></head><body><img src="a" alt="trusted"></body></html>`,
		"no label":        `<!DOCTYPE html><html lang="en"><head><title>x</title></head><body><input id="q" name="q"></body></html>`,
		"no lang":         `<!DOCTYPE html><html><head><title>x</title></head><body></body></html>`,
		"no title":        `<!DOCTYPE html><html lang="en"><head></head><body></body></html>`,
		"unclosed":        `<!DOCTYPE html><html lang="en"><head><title>x</title></head><body><div></body></html>`,
		"duplicate id":    `<!DOCTYPE html><html lang="en"><head><title>x</title></head><body><p id="a"></p><p id="a"></p></body></html>`,
	} {
		if len(desktest.Lint([]byte(page))) == 0 {
			t.Errorf("%s: no problem found", name)
		}
	}
}

// TestRenderEscapes: what a server sends is text, never markup.
func TestRenderEscapes(t *testing.T) {
	p := fixture()["server"]
	v := *p.Data.(*desk.ServerView)
	v.Tools = []desk.Tool{{Name: `<script>alert(1)</script>`, Description: desk.Highlight(`<img src=x onerror=alert(1)>`, nil), Schema: "</pre><b>"}}
	p.Data = &v
	page := render(t, desk.MustLoad(), "server", p)
	for _, bad := range []string{"<script>alert", "<img src=x", "</pre><b>"} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("page holds %q unescaped", bad)
		}
	}
}

func TestHighlight(t *testing.T) {
	for _, c := range []struct {
		text  string
		spans []string
		want  string // marked runs in [brackets]
	}{
		{"Look up. You must pass the city.", []string{"you must"}, "Look up. [You must] pass the city."},
		{"You  MUST\tpass", []string{"you must pass"}, "[You  MUST\tpass]"},
		{"no match here", []string{"absent"}, "no match here"},
		{"ｙｏｕ must", []string{"you must"}, "[ｙｏｕ must]"},
		{"a b a b", []string{"a"}, "[a] b [a] b"},
		{"clipped span here", []string{"span he…"}, "clipped [span he]re"},
		{"", []string{"x"}, ""},
	} {
		var b strings.Builder
		for _, s := range desk.Highlight(c.text, c.spans) {
			if s.Mark {
				b.WriteString("[" + s.Text + "]")
			} else {
				b.WriteString(s.Text)
			}
		}
		if b.String() != c.want {
			t.Errorf("Highlight(%q, %q) = %q, want %q", c.text, c.spans, b.String(), c.want)
		}
	}
}

// contrastPairs are the foreground and background colours the style sheet
// sets together, by custom property; each must reach 4.5:1 (WCAG AA).
var contrastPairs = [][2]string{
	{"ink", "paper"}, {"muted", "paper"}, {"link", "paper"}, {"amber", "paper"}, {"amber", "amber-paper"},
	{"ink", "mark"}, {"ink", "panel"}, {"muted", "panel"}, {"link", "panel"}, {"paper", "link"}, {"amber", "panel"},
}

func TestContrast(t *testing.T) {
	css, err := desk.StyleSheet()
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`--([a-z-]+):\s*(#[0-9a-f]{6})`).FindAllStringSubmatch(css, -1) {
		vars[m[1]] = m[2]
	}
	for _, p := range contrastPairs {
		fg, bg := vars[p[0]], vars[p[1]]
		if fg == "" || bg == "" {
			t.Errorf("--%s or --%s is not set", p[0], p[1])
			continue
		}
		if r := contrast(fg, bg); r < 4.5 {
			t.Errorf("--%s %s on --%s %s: %.2f:1, under 4.5:1", p[0], fg, p[1], bg, r)
		} else {
			t.Logf("--%s on --%s: %.2f:1", p[0], p[1], r)
		}
	}
	if r := contrast("#8a5300", "#ffffff"); r < 4.5 {
		t.Errorf("the amber of a change on white is %.2f:1", r)
	}
	if r := contrast("#c98a1b", "#ffffff"); r >= 4.5 {
		t.Errorf("the check cannot fail: the badge's light amber passes at %.2f:1", r)
	}
}

// contrast is the WCAG 2 contrast ratio of two #rrggbb colours.
func contrast(a, b string) float64 {
	la, lb := luminance(a), luminance(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

func luminance(hex string) float64 {
	var c [3]float64
	for i := range c {
		v, _ := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		s := float64(v) / 255
		if s <= 0.04045 {
			c[i] = s / 12.92
		} else {
			c[i] = math.Pow((s+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
}
