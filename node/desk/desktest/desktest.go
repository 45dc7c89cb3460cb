// Package desktest checks rendered desk pages for the tests of the desk
// and of the node's desk handlers: that a page is well-formed HTML with a
// language and a title, that every form control has a label, that ids are
// unique, and that nothing a reader sees (text, titles, alt texts, labels,
// placeholders) uses a word DESIGN.md forbids.
package desktest

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/net/html"

	"github.com/histor-observer/histor/log/awr"
)

// voidElements never have an end tag.
var voidElements = []string{"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

// visibleAttrs are the attributes a reader meets: shown as tooltips, read
// by screen readers, or shown in empty fields.
var visibleAttrs = []string{"title", "alt", "aria-label", "placeholder", "value"}

// Lint returns every problem found in page; none for a good page.
func Lint(page []byte) []error {
	l := &linter{ids: map[string]bool{}, labelFor: map[string]bool{}}
	l.tokens(page)
	l.tree(page)
	for _, id := range l.controls {
		if !l.labelFor[id] {
			l.errorf("form control #%s has no <label for>", id)
		}
	}
	return l.errs
}

type linter struct {
	errs     []error
	ids      map[string]bool
	labelFor map[string]bool
	controls []string // ids of controls that need a label
	title    string
	lang     string
}

func (l *linter) errorf(format string, args ...any) {
	l.errs = append(l.errs, fmt.Errorf(format, args...))
}

// tokens checks nesting: every element but a void one is closed, in order.
func (l *linter) tokens(page []byte) {
	z := html.NewTokenizer(bytes.NewReader(page))
	var open []string
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				l.errorf("tokenizing: %v", z.Err())
			}
			if len(open) > 0 {
				l.errorf("elements left open: %v", open)
			}
			return
		case html.StartTagToken:
			t := z.Token()
			l.element(t)
			if !slices.Contains(voidElements, t.Data) {
				open = append(open, t.Data)
			}
		case html.SelfClosingTagToken:
			l.element(z.Token())
		case html.EndTagToken:
			t := z.Token()
			if len(open) == 0 || open[len(open)-1] != t.Data {
				l.errorf("</%s> closes %v", t.Data, open)
				return
			}
			open = open[:len(open)-1]
		}
	}
}

// element checks one start tag's attributes.
func (l *linter) element(t html.Token) {
	attr := map[string]string{}
	for _, a := range t.Attr {
		attr[a.Key] = a.Val
		if slices.Contains(visibleAttrs, a.Key) {
			l.words(fmt.Sprintf("<%s %s>", t.Data, a.Key), a.Val)
		}
	}
	if id, ok := attr["id"]; ok {
		if l.ids[id] {
			l.errorf("id %q used twice", id)
		}
		l.ids[id] = true
	}
	switch t.Data {
	case "html":
		l.lang = attr["lang"]
	case "label":
		l.labelFor[attr["for"]] = true
	case "img":
		if _, ok := attr["alt"]; !ok {
			l.errorf("<img src=%q> has no alt", attr["src"])
		}
	case "input", "select", "textarea":
		if attr["type"] == "hidden" || attr["type"] == "submit" {
			return
		}
		if attr["aria-label"] != "" {
			return
		}
		if attr["id"] == "" {
			l.errorf("<%s name=%q> has no id for a label", t.Data, attr["name"])
			return
		}
		l.controls = append(l.controls, attr["id"])
	}
}

// tree parses the page as a browser does and checks its visible text.
func (l *linter) tree(page []byte) {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		l.errorf("parsing: %v", err)
		return
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (n.Data == "style" || n.Data == "script") {
			return
		}
		if n.Type == html.ElementNode && n.Data == "title" && n.FirstChild != nil {
			l.title = n.FirstChild.Data
		}
		if n.Type == html.TextNode {
			l.words("text", n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if l.lang == "" {
		l.errorf("<html> has no lang")
	}
	if strings.TrimSpace(l.title) == "" {
		l.errorf("no <title>")
	}
}

func (l *linter) words(where, s string) {
	if w := awr.ForbiddenWord(s); w != "" {
		l.errorf("%s says %q: %q", where, w, s)
	}
}
