package desk

import (
	"bytes"
	"net/http"

	"github.com/histor-observer/histor/node/catalog"
)

// pages are the desk's parsed templates; they are part of the binary, so
// they are parsed once, and a template that does not parse fails every
// test of this package.
var pages = MustLoad()

// pageCSP is the policy of every page but the Log page: the pages run no
// script and load nothing from elsewhere.
const pageCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// scriptCSP are the policies of the pages that run a script, by page
// name; every other page is served under pageCSP.
var scriptCSP = map[string]string{"log": logPageCSP}

// render answers one page: the layout filled from the log's latest head,
// the page's own view model as data.
func (m Mount) render(w http.ResponseWriter, r *http.Request, status int, name, title, nav string, data any) {
	p := Page{Title: title, Nav: nav, Data: data}
	head := m.Log.Latest()
	p.Origin = checkpointOrigin(head.Checkpoint)
	if head.STH != nil {
		p.HeadSize, p.HeadTime = head.Size, catalog.FormatTime(head.Time)
	}
	var buf bytes.Buffer
	if err := pages.Render(&buf, name, p); err != nil {
		m.internal(w, r, "rendering "+name+" page", err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	csp, ok := scriptCSP[name]
	if !ok {
		csp = pageCSP
	}
	h.Set("Content-Security-Policy", csp)
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// checkpointOrigin is the first line of a checkpoint note, its origin.
func checkpointOrigin(cp []byte) string {
	line, _, _ := bytes.Cut(cp, []byte("\n"))
	return string(line)
}

// notFound answers a page for something that is not there.
func (m Mount) notFound(w http.ResponseWriter, r *http.Request, what string) {
	m.render(w, r, http.StatusNotFound, "notfound", "Not found", "", what)
}

// convertAll maps f over in, in order, into the view types.
func convertAll[T, U any](in []T, f func(*T) U) []U {
	out := make([]U, len(in))
	for i := range in {
		out[i] = f(&in[i])
	}
	return out
}
