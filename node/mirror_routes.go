package node

import (
	"errors"
	"net/http"
	"strings"

	"github.com/histor-observer/histor/node/mirror"
)

// serveMirrors answers /api/v1/mirrors: every observer's log this node mirrors, how far,
// and what the last sync met.
func (a *api) serveMirrors(w http.ResponseWriter, r *http.Request) {
	var list []mirror.Status
	if m := a.fed.mirror.Load(); m != nil {
		list = m.Statuses()
	}
	if list == nil {
		list = []mirror.Status{}
	}
	a.writeJSON(w, r, map[string]any{"mirrors": list})
}

// serveMirrorPath answers /mirror/<did>/checkpoint and /mirror/<did>/tile/…: the
// observer's log as this node holds it, the bytes the observer signed.
func (a *api) serveMirrorPath(w http.ResponseWriter, r *http.Request) {
	m := a.fed.mirror.Load()
	if m == nil {
		a.fail(w, http.StatusNotFound, "this node mirrors no log")
		return
	}
	did := r.PathValue("did")
	rest := strings.TrimPrefix(r.URL.Path, "/mirror/"+did+"/")
	body, err := readMirror(m, did, rest)
	switch {
	case errors.Is(err, mirror.ErrNotFound):
		a.fail(w, http.StatusNotFound, "not in this node's mirror")
		return
	case errors.Is(err, mirror.ErrMalformed):
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		a.internal(w, r, "reading the mirror", err)
		return
	}
	h := w.Header()
	if rest == "checkpoint" {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
	} else {
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Cache-Control", "public, max-age=3600")
	}
	w.Write(body)
}
