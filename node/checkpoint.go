package node

import "net/http"

// serveCheckpoint answers /log/checkpoint with the latest C2SP checkpoint.
func (a *api) serveCheckpoint(w http.ResponseWriter, r *http.Request) {
	head := a.log.Latest()
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	// Mutable: the spec asks that caches keep it no more than a few seconds.
	h.Set("Cache-Control", "no-cache")
	w.Write(head.Checkpoint)
}
