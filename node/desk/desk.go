package desk

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"
)

//go:embed templates/*.html desk.css
var files embed.FS

// layoutFile is the template every page is rendered inside. Files whose
// names start with "_" hold templates several pages share; every other
// file in templates/ is one page, named by its file name without ".html",
// and defines "content".
const layoutFile = "templates/layout.html"

// Desk holds the parsed pages. It is safe for concurrent use.
type Desk struct {
	pages map[string]*template.Template
	css   template.CSS
	bufs  sync.Pool // *bytes.Buffer, so a page is written in one piece
}

// Load parses the embedded layout and pages.
func Load() (*Desk, error) {
	css, err := files.ReadFile("desk.css")
	if err != nil {
		return nil, fmt.Errorf("reading style sheet: %w", err)
	}
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("listing templates: %w", err)
	}
	shared := []string{layoutFile}
	var pages []string
	for _, f := range names {
		switch {
		case f == layoutFile:
		case strings.HasPrefix(path.Base(f), "_"):
			shared = append(shared, f)
		default:
			pages = append(pages, f)
		}
	}
	d := &Desk{pages: map[string]*template.Template{}, css: template.CSS(css)}
	for _, f := range pages {
		t, err := template.New(path.Base(layoutFile)).Funcs(funcs).ParseFS(files, append(shared, f)...)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", f, err)
		}
		d.pages[strings.TrimSuffix(path.Base(f), ".html")] = t
	}
	d.bufs.New = func() any { return new(bytes.Buffer) }
	return d, nil
}

// MustLoad is Load for package initialisation: the templates are part of
// the binary, so one that does not parse is a bug found by any test.
func MustLoad() *Desk {
	d, err := Load()
	if err != nil {
		panic("desk: " + err.Error())
	}
	return d
}

// Pages lists the page names Render knows, in no particular order.
func (d *Desk) Pages() []string {
	out := make([]string, 0, len(d.pages))
	for name := range d.pages {
		out = append(out, name)
	}
	return out
}

// Page is what every page shows around its own content.
type Page struct {
	// Title names the page in <title> (after the site name) and its <h1>.
	Title string
	// Nav is the navigation entry of the page ("servers", "changes",
	// "check", "log", "network", "about"), marked aria-current.
	Nav string
	// Origin is the log's origin (its checkpoint name); HeadSize and
	// HeadTime describe its latest signed head (HeadTime "" before the
	// first).
	Origin   string
	HeadSize uint64
	HeadTime string
	// Data is the page's own view model (ServersView, ServerView, …).
	Data any
	css  template.CSS
}

// Render writes page name with p. Nothing is written when rendering fails,
// so a handler can still answer with an error.
func (d *Desk) Render(w io.Writer, name string, p Page) error {
	t := d.pages[name]
	if t == nil {
		return fmt.Errorf("rendering desk page %q: no such page", name)
	}
	p.css = d.css
	buf := d.bufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 1<<20 {
			buf.Reset()
			d.bufs.Put(buf)
		}
	}()
	buf.Reset()
	if err := t.Execute(buf, &p); err != nil {
		return fmt.Errorf("rendering desk page %q: %w", name, err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// CSS is the style sheet every page carries inline.
func (p *Page) CSS() template.CSS { return p.css }

// Navigation is the header's entries, in order.
var Navigation = []NavItem{
	{"servers", "Servers", "/servers"},
	{"changes", "Changes", "/changes"},
	{"check", "Check", "/check"},
	{"log", "Log", "/log"},
	{"network", "Network", "/network"},
	{"about", "About", "/about"},
}

// NavItem is one header navigation entry.
type NavItem struct{ Key, Label, Href string }

// Navigation is the header entries the layout draws.
func (p *Page) Navigation() []NavItem { return Navigation }

var funcs = template.FuncMap{
	"short": shortDigest,
}

// shortDigest cuts a long digest or id for a table cell; the full value
// stays in the title attribute or a link.
func shortDigest(s string) string {
	if len(s) <= 24 {
		return s
	}
	return s[:20] + "…"
}

// StyleSheet is the desk's style sheet, as every page carries it.
func StyleSheet() (string, error) {
	b, err := files.ReadFile("desk.css")
	return string(b), err
}
