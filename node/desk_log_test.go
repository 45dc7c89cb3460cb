package node

import (
	"encoding/hex"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/log/awr"
)

// visibleText is what a reader or a screen reader meets on a page: the
// text between tags and the alt, title, aria-label and placeholder
// attributes (SVG <title> and <desc> are text between tags).
func visibleText(page string) string {
	page = regexp.MustCompile(`(?s)<(script|style)\b.*?</(script|style)>`).ReplaceAllString(page, " ")
	var out []string
	for _, m := range regexp.MustCompile(`(?:alt|title|aria-label|placeholder)="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	out = append(out, regexp.MustCompile(`<[^>]*>`).ReplaceAllString(page, " "))
	return html.UnescapeString(strings.Join(out, "\n"))
}

// checkpointOnPage is the text of the page's checkpoint block.
func checkpointOnPage(page string) string {
	m := regexp.MustCompile(`(?s)<pre id="checkpoint">(.*?)</pre>`).FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

func TestLogPage(t *testing.T) {
	for _, n := range []int{0, 1, 16, 17, 1000} {
		tn := newTestNode(t, n)
		resp, body := tn.get(t, "/log")
		page := string(body)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("size %d: GET /log: %d %s", n, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("size %d: CSP %q", n, csp)
		}
		if w := awr.ForbiddenWord(visibleText(page)); w != "" {
			t.Errorf("size %d: the page says %q", n, w)
		}
		if got, want := checkpointOnPage(page), string(tn.node.Log().Latest().Checkpoint); got != want {
			t.Errorf("size %d: the page shows checkpoint %q, want %q", n, got, want)
		}
		if !strings.Contains(page, `data-met="none"`) {
			t.Errorf("size %d: a node without witnesses claims a policy", n)
		}
		for _, want := range []string{`<html lang="en">`, `<main id="main"`, `role="status" aria-live="polite"`, `<script type="module" src="/static/log.js">`} {
			if !strings.Contains(page, want) {
				t.Errorf("size %d: page lacks %s", n, want)
			}
		}
		if n == 0 {
			if strings.Contains(page, "<svg") || !strings.Contains(page, `data-size="0"`) {
				t.Errorf("empty log: page draws a tree or claims a head")
			}
			continue
		}
		head := tn.node.Log().Latest()
		root := hex.EncodeToString(head.Root[:])
		for _, want := range []string{
			`data-root="` + root + `"`,
			`<svg xmlns="http://www.w3.org/2000/svg" id="tree" role="img" aria-labelledby="tree-title tree-desc"`,
			"<title>the signed root " + root + "</title>",
			`<table id="tree-table">`,
		} {
			if !strings.Contains(page, want) {
				t.Errorf("size %d: page lacks %s", n, want)
			}
		}
		if shapes := strings.Count(page, "<circle") + strings.Count(page, "<polygon"); shapes > 80 {
			t.Errorf("size %d: %d shapes drawn", n, shapes)
		}
	}
}

// TestLogPageWitnessPolicy: a log whose one witness cosigned shows the
// policy met and which witness cosigned.
func TestLogPageWitnessPolicy(t *testing.T) {
	w := newFedNode(t, "w", "w", false)
	l := newFedNode(t, "l", "l", false)
	w.start(t, Config{WitnessLogs: []string{l.witnessLog(t)}})
	l.start(t, Config{Witnesses: []string{w.witnessSpec(t)}})
	l.appendLabel(t)
	cp := cosignedBy(t, l, w)
	_, body := l.get(t, "/log")
	page := string(body)
	if checkpointOnPage(page) != string(cp) {
		t.Errorf("the page does not carry the cosigned checkpoint:\n%s", cp)
	}
	for _, want := range []string{`data-met="true"`, "cosigned by 1 of 1 listed witnesses", "<td>yes</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestWitnessViewUnmet: a checkpoint without the cosignature the quorum
// needs reads as not met, naming no witness.
func TestWitnessViewUnmet(t *testing.T) {
	w := newFedNode(t, "w", "w", false)
	l := newFedNode(t, "l", "l", false)
	l.start(t, Config{})
	l.appendLabel(t)
	v := policyView(policy(t, l, w), l.node.Log().Latest().Checkpoint)
	if !v.Configured || v.Met || v.Cosigned != 0 || v.Listed != 1 || v.Problem != "" || v.Witnesses[0].Cosigned {
		t.Errorf("witness view of an uncosigned checkpoint: %+v", v)
	}
}

func TestStaticFiles(t *testing.T) {
	tn := newTestNode(t, 0)
	for _, tt := range []struct {
		path   string
		status int
		ctype  string
	}{
		{"/static/log.js", 200, "text/javascript; charset=utf-8"},
		{"/static/logtree.js", 200, "text/javascript; charset=utf-8"},
		{"/static/nope.js", 404, ""},
		{"/static/log.html", 404, ""},
		{"/static/..%2flog.js", 404, ""},
	} {
		resp, body := tn.get(t, tt.path)
		if resp.StatusCode != tt.status || (tt.ctype != "" && resp.Header.Get("Content-Type") != tt.ctype) {
			t.Errorf("GET %s: %d %q, want %d %q", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), tt.status, tt.ctype)
		}
		if tt.status != 200 {
			continue
		}
		if w := awr.ForbiddenWord(string(body)); w != "" {
			t.Errorf("%s says %q", tt.path, w)
		}
		req, _ := http.NewRequest("GET", tn.srv.URL+tt.path, nil)
		req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
		again, err := tn.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		again.Body.Close()
		if again.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: %d, want 304", tt.path, again.StatusCode)
		}
	}
}

// TestLogPageServerTime renders /log of a log of a few thousand labels and
// reports the time; the page reads a proof and sixteen entries, so its
// cost does not grow with the log.
func TestLogPageServerTime(t *testing.T) {
	tn := newTestNode(t, 5000)
	const rounds = 50
	h := tn.node.Handler()
	start := time.Now()
	for range rounds {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/log", nil))
		if rec.Code != 200 {
			t.Fatalf("GET /log: %d", rec.Code)
		}
	}
	per := time.Since(start) / rounds
	t.Logf("GET /log at 5,000 labels: %v server time a page", per)
	if per > 100*time.Millisecond {
		t.Errorf("GET /log took %v, over the desk's 100 ms", per)
	}
}
