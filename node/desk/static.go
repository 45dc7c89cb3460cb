package desk

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/histor-observer/histor/internal/httpx"
)

// staticFiles are the scripts the Log page loads from /static/<name>.
//
//go:embed static/*.js
var staticFiles embed.FS

// staticTypes are the media types of what /static/ serves, by extension.
var staticTypes = map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}

// serveStatic answers /static/<name> with an embedded file. A file changes
// only with the binary, so its ETag is its digest and a browser revalidates.
func (m Mount) serveStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	ctype, ok := staticTypes[path.Ext(name)]
	if !ok || strings.ContainsAny(name, "/\\") {
		httpx.WriteDetail(w, http.StatusNotFound, "no such file")
		return
	}
	body, err := staticFiles.ReadFile("static/" + name)
	if err != nil {
		httpx.WriteDetail(w, http.StatusNotFound, "no such file")
		return
	}
	sum := sha256.Sum256(body)
	etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Content-Type", ctype)
	w.Write(body)
}
