package node

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/registry/registrytest"
	"github.com/histor-observer/histor/e2e/browser"
)

// deskMCP is a Go SDK MCP server with one tool whose description a test
// changes between crawls (node_test's changingServer, which this package's
// tests cannot reach).
type deskMCP struct {
	tool string
	desc atomic.Pointer[string]
	srv  *httptest.Server
}

func newDeskMCP(t *testing.T, tool, desc string) *deskMCP {
	m := &deskMCP{tool: tool}
	m.desc.Store(&desc)
	m.srv = httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: tool, Version: "1.0.0"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: tool, Description: *m.desc.Load()},
			func(context.Context, *mcp.CallToolRequest, struct {
				City string `json:"city"`
			}) (*mcp.CallToolResult, any, error) {
				panic("a tool was called")
			})
		return s
	}, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *deskMCP) endpoint() string { return m.srv.URL + "/mcp" }

func (m *deskMCP) set(desc string) { m.desc.Store(&desc) }

// toolsList is the tools/list result a client of m reads now, as JSON: what
// a reader pastes into /check.
func (m *deskMCP) toolsList(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "desk-e2e", Version: "1"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: m.endpoint()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	res, err := sess.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// deskWorld is a node that crawled a registry fixture of local MCP servers
// (twice so far, weather's description changing in between), served behind
// the forging proxy with a browser on it.
type deskWorld struct {
	*e2eSite
	weather, steady *deskMCP
	mu              sync.Mutex
	clock           time.Time
}

func (w *deskWorld) now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.clock
}

// crawl advances the clock a day and a bit (past continuity's 20 h) and
// crawls once, in the foreground.
func (w *deskWorld) crawl() {
	w.t.Helper()
	w.mu.Lock()
	w.clock = w.clock.Add(25 * time.Hour)
	w.mu.Unlock()
	sum, err := w.node.crawls.Run()
	if err != nil {
		w.t.Fatalf("crawling: %v", err)
	}
	w.t.Logf("crawl: %+v; log at %d labels", *sum, w.node.Log().Latest().Size)
}

func newDeskWorld(t *testing.T) *deskWorld {
	t.Helper()
	w := &deskWorld{clock: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
		weather: newDeskMCP(t, "forecast", "Returns the forecast for a city."),
		steady:  newDeskMCP(t, "echo", "Echoes the city back.")}
	reg := registrytest.Server(t, []registrytest.Entry{
		{Name: "io.example/weather", Title: "Weather", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: w.weather.endpoint()}}},
		{Name: "io.example/steady", Title: "Steady", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: w.steady.endpoint()}}},
	})
	nd, err := New(Config{DataDir: t.TempDir(), LogOrigin: "desk-e2e.example/log", Now: w.now, PublicURL: "http://desk-e2e.example",
		Crawl: crawl.Config{Registry: reg.URL, AllowPrivateTargets: true, Now: w.now}})
	if err != nil {
		t.Fatal(err)
	}
	if err := nd.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nd.Close() })
	w.e2eSite = newE2ESite(t, nd)
	w.crawl()
	w.weather.set("Returns the forecast for a city, in degrees Celsius.")
	w.crawl()
	return w
}

// waitFor polls a JavaScript condition until it is true, across the
// navigation a form submission or a click starts (an evaluation cut off by
// it is tried again in the new page).
func (s *e2eSite) waitFor(what, cond string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.b.Ctx, browser.DefaultTimeout)
	defer cancel()
	for {
		ok, err := chromedp.Run(ctx, chromedp.Poll[bool](`(document.readyState === "complete" && (`+cond+`)) || false`,
			chromedp.WithPollingInterval(10*time.Millisecond)))
		if err == nil && ok {
			return
		}
		if ctx.Err() != nil {
			s.b.Screenshot("never-" + what)
			s.t.Fatalf("waiting for %s: %v", what, err)
		}
	}
}

// text is the visible text of the page's <main>.
func (s *e2eSite) text() string {
	s.t.Helper()
	return browser.Eval[string](s.b, `document.getElementById("main").innerText`)
}

// focusIs is a step that fails unless the focused element matches sel.
func focusIs(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		ok, err := chromedp.Evaluate[bool](`document.activeElement.matches(`+jsString(sel)+`)`)(ctx, t)
		if err != nil {
			return err
		}
		if !ok {
			what, _ := chromedp.Evaluate[string](`document.activeElement.outerHTML.slice(0, 120)`)(ctx, t)
			return fmt.Errorf("focus is on %s, not %s", what, sel)
		}
		return nil
	})
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// audit measures the open page in the browser (contrast of every text
// and of amber text, accessible names, a visible focus at every Tab stop)
// and takes its screenshot.
func (s *e2eSite) audit(name string) {
	s.t.Helper()
	a := s.b.AuditPage()
	for _, p := range a.Problems {
		s.t.Errorf("%s: %s", name, p)
	}
	stops := s.b.TabThrough(300)
	drawn := 0
	for _, f := range stops {
		if f.Visible {
			drawn++
		} else {
			s.t.Errorf("%s: focus on %s is not drawn (%s)", name, f.What, f.Style)
		}
	}
	if len(stops) == 0 || !strings.HasPrefix(stops[0].What, "a.skip") {
		s.t.Errorf("%s: the first Tab stop is not the skip link: %v", name, stops)
	}
	s.t.Logf("%s: body text %.2f:1, amber %.2f:1 (lowest of %d), %d texts measured, focus drawn at %d of %d Tab stops",
		name, a.Body, a.Amber, a.AmberCount, a.Texts, drawn, len(stops))
	s.b.Screenshot(name)
}

// TestDeskInBrowser walks the desk as a reader does, in headless Chromium,
// against a node that really crawled local MCP servers: the servers list
// searched (by keyboard alone) and filtered, a server page, the change in
// amber, a check pasted into the form and its signed answer, and the Log
// page keeping a head, proving the grown log consistent and refusing a
// forged head. Every page is measured for contrast, labels and focus.
func TestDeskInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls local MCP servers and starts headless Chromium; skipped in -short")
	}
	if browser.Executable() == "" {
		t.Skip("no Chromium: install Debian's chromium or set HISTOR_CHROMIUM")
	}
	start := time.Now()
	w := newDeskWorld(t)
	w.servers(t)
	w.serverAndDiff(t)
	w.check(t)
	w.logPage(t)
	for _, p := range []string{"/changes", "/network", "/about"} {
		w.open(p)
		w.audit(strings.TrimPrefix(p, "/"))
	}
	t.Logf("the desk in the browser: %v", time.Since(start).Round(time.Millisecond))
}

// servers searches by keyboard alone and filters by state.
func (w *deskWorld) servers(t *testing.T) {
	w.open("/servers")
	if txt := w.text(); !strings.Contains(txt, "io.example/weather") || !strings.Contains(txt, "io.example/steady") {
		t.Fatalf("/servers lacks the crawled servers:\n%s", txt)
	}
	w.audit("servers")

	w.open("/servers")
	w.b.Do("tabbing to the skip link and the search box, submitting with Enter",
		chromedp.KeyEvent("\t"), focusIs("a.skip[href='#main']"), chromedp.KeyEvent("\r"), focusIs("main"),
		chromedp.KeyEvent("\t"), focusIs("input#q"), chromedp.KeyEvent("weather\r"))
	w.waitFor("the search", `location.search === "?q=weather&state=all"`)
	if txt := w.text(); !strings.Contains(txt, "io.example/weather") || strings.Contains(txt, "io.example/steady") {
		t.Errorf("q=weather shows:\n%s", txt)
	}
	w.b.Screenshot("servers-q-by-keyboard")

	w.b.Do("filtering changed servers", chromedp.Clear("#q"), chromedp.SetValue("#state", "changed"),
		chromedp.Click("form.search button"))
	w.waitFor("the filter", `location.search === "?q=&state=changed"`)
	txt := w.text()
	if !strings.Contains(txt, "io.example/weather") || strings.Contains(txt, "io.example/steady") {
		t.Errorf("state=changed shows:\n%s", txt)
	}
	if n := browser.Eval[int](w.b, `document.querySelectorAll("tbody .changed").length`); n != 1 {
		t.Errorf("state=changed marks %d rows changed, want 1", n)
	}
	w.audit("servers-changed")
}

// serverAndDiff opens the changed server's page from the list, then its
// change, and checks the change is drawn in the style sheet's amber.
func (w *deskWorld) serverAndDiff(t *testing.T) {
	w.b.Do("opening the server", chromedp.Click(`tbody a[href^="/s/"]`))
	w.waitFor("the server page", `location.pathname.startsWith("/s/")`)
	txt := w.text()
	for _, want := range []string{"io.example/weather", "Tool definitions changed", "forecast", "in degrees Celsius"} {
		if !strings.Contains(txt, want) {
			t.Errorf("server page lacks %q", want)
		}
	}
	w.audit("server")

	w.b.Do("opening the change", chromedp.Click(`a[href^="/changes/"]`))
	w.waitFor("the change page", `/^\/changes\/\d+$/.test(location.pathname)`)
	added := browser.Eval[string](w.b, `[...document.querySelectorAll(".diff-add")].map((e) => e.textContent).join("")`)
	if !strings.Contains(added, "degrees Celsius") {
		t.Errorf("the diff adds %q, want the added words", added)
	}
	colours := browser.Eval[[]string](w.b, `(() => {
		const probe = document.createElement("span");
		probe.style.color = "var(--amber)";
		document.body.append(probe);
		const amber = getComputedStyle(probe).color;
		probe.remove();
		return [amber, ...[...document.querySelectorAll(".diff-add, .diff-del, .changed, .amber")].map((e) => getComputedStyle(e).color)];
	})()`)
	if len(colours) < 2 {
		t.Errorf("the change page draws nothing in amber")
	}
	for _, c := range colours[1:] {
		if c != colours[0] {
			t.Errorf("a change is drawn in %s, not the amber %s", c, colours[0])
		}
	}
	w.audit("change")
}

// check pastes what a client reads from tools/list into /check and reads
// the signed answer off the page.
func (w *deskWorld) check(t *testing.T) {
	w.open("/check")
	w.audit("check-form")
	w.b.Do("pasting a tools/list result", chromedp.SetValue("#endpoint", w.weather.endpoint()),
		chromedp.SetValue("#tools", w.weather.toolsList(t)), chromedp.Click("form.check button"))
	w.waitFor("the answer", `document.getElementById("signed") !== null`)
	signed := browser.Eval[string](w.b, `document.getElementById("signed").textContent`)
	verifyCheckAnswer(t, []byte(signed), w.node.id.logKey.Public().(ed25519.PublicKey))
	var ans struct {
		Match  string `json:"match"`
		Target struct {
			Name string `json:"name"`
		} `json:"target"`
	}
	if err := json.Unmarshal([]byte(signed), &ans); err != nil || ans.Match != "same" || ans.Target.Name != "io.example/weather" {
		t.Errorf("the signed answer: %v, match %q for %q", err, ans.Match, ans.Target.Name)
	}
	if txt := w.text(); !strings.Contains(txt, "same") || !strings.Contains(txt, "lists io.example/weather") {
		t.Errorf("the answer in words:\n%s", txt)
	}
	w.audit("check-answer")
}

// logWithoutScript reads the Log page with script turned off: the head,
// the checkpoint, the witness policy and the tree are all there, and the
// check says it needs script.
func (w *deskWorld) logWithoutScript(t *testing.T) {
	set := func(off bool) {
		if _, err := chromedp.Call(w.b.Ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: off}); err != nil {
			t.Fatalf("turning script off=%v: %v", off, err)
		}
	}
	set(true)
	defer set(false)
	w.open("/log")
	type page struct {
		State, Head, Checkpoint, Policy string
		Shapes                          int
	}
	p := browser.Eval[page](w.b, `({
		State: document.getElementById("check-status").dataset.state,
		Head: document.getElementById("head").innerText,
		Checkpoint: document.getElementById("checkpoint").textContent,
		Policy: document.getElementById("policy").innerText,
		Shapes: document.querySelectorAll("svg#tree circle, svg#tree polygon").length,
	})`)
	head := w.node.Log().Latest()
	if p.State != "idle" {
		t.Errorf("without script the check ran: %s", p.State)
	}
	if !strings.Contains(p.Head, fmt.Sprintf("%d labels", head.Size)) || p.Checkpoint != string(head.Checkpoint) ||
		!strings.Contains(p.Policy, "no witness policy applies") || p.Shapes == 0 {
		t.Errorf("the Log page without script: %+v", p)
	}
	w.b.Screenshot("log-without-script")
}

// logPage keeps a head, lets the log grow by a crawl, proves the grown log
// consistent in the browser and watches a forged head refused.
func (w *deskWorld) logPage(t *testing.T) {
	w.logWithoutScript(t)
	w.open("/log")
	if state, text, _ := w.awaitCheck(); state != "signed" {
		t.Fatalf("first visit to /log: %s: %s", state, text)
	}
	w.audit("log")
	w.b.Do("keeping the head", chromedp.Click(chromedp.ID("keep")))
	keptHead := w.node.Log().Latest()
	if got := w.kept(); got != string(keptHead.STH) {
		t.Fatalf("kept %q, want the head at %d", got, keptHead.Size)
	}
	w.b.Screenshot("log-kept")

	w.steady.set("Echoes the city back, in capitals.")
	w.crawl()
	grown := w.node.Log().Latest()
	if grown.Size <= keptHead.Size {
		t.Fatalf("the crawl did not grow the log: %d → %d", keptHead.Size, grown.Size)
	}
	w.b.Do("reloading the log", chromedp.Reload())
	state, text, ms := w.awaitCheck()
	if state != "proven" || !strings.Contains(text, fmt.Sprintf("extends the kept head (%d labels)", keptHead.Size)) {
		t.Fatalf("after the log grew: %s: %s", state, text)
	}
	t.Logf("log %d → %d labels: proven in the browser in %.1f ms", keptHead.Size, grown.Size, ms)
	w.b.Screenshot("log-grown-consistent")

	w.setForge(forgeSignature)
	w.b.Do("reloading with a forged head", chromedp.Reload())
	state, text, _ = w.awaitCheck()
	if state != "refused" || !strings.Contains(text, "signature does not verify") {
		t.Errorf("a forged head: %s: %s", state, text)
	}
	if got := w.kept(); got != string(keptHead.STH) {
		t.Errorf("the forged head replaced the kept one: %q", got)
	}
	w.b.Screenshot("log-forged-refused")
	w.setForge(nil)
}
