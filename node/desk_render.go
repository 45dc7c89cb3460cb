package node

import (
	"bytes"
	"net/http"

	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/desk"
)

// deskPages are the desk's parsed templates; they are part of the binary,
// so they are parsed once, and a template that does not parse fails every
// test of this package.
var deskPages = desk.MustLoad()

// deskCSP is the policy of every desk page but the Log page: the pages run
// no script and load nothing from elsewhere.
const deskCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// pageCSP are the policies of the pages that run a script, by page name;
// every other page is served under deskCSP.
var pageCSP = map[string]string{"log": logPageCSP}

// renderDesk answers one desk page: the layout filled from the log's
// latest head, the page's own view model as data.
func (a *api) renderDesk(w http.ResponseWriter, r *http.Request, status int, name, title, nav string, data any) {
	p := desk.Page{Title: title, Nav: nav, Data: data}
	head := a.log.Latest()
	p.Origin = checkpointOrigin(head.Checkpoint)
	if head.STH != nil {
		p.HeadSize, p.HeadTime = head.Size, catalog.FormatTime(head.Time)
	}
	var buf bytes.Buffer
	if err := deskPages.Render(&buf, name, p); err != nil {
		a.internal(w, r, "rendering "+name+" page", err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	csp, ok := pageCSP[name]
	if !ok {
		csp = deskCSP
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

// deskNotFound answers a desk page for something that is not there.
func (a *api) deskNotFound(w http.ResponseWriter, r *http.Request, what string) {
	a.renderDesk(w, r, http.StatusNotFound, "notfound", "Not found", "", what)
}

// convertAll maps f over in, in order, into the desk's view types.
func convertAll[T, U any](in []T, f func(*T) U) []U {
	out := make([]U, len(in))
	for i := range in {
		out[i] = f(&in[i])
	}
	return out
}
