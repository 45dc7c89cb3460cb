package pkgstest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// NPMPackage is one version to publish on an NPMRegistry.
type NPMPackage struct {
	Name    string
	Version string
	// Manifest holds package.json members beyond name and version (bin,
	// scripts, dependencies); they also go into the version document.
	Manifest map[string]any
	// Files are the tarball's files under package/, besides package.json.
	Files map[string]string
	// Meta holds version-document members only the registry adds
	// (_npmUser, maintainers); DistMeta members of dist (signatures,
	// attestations).
	Meta     map[string]any
	DistMeta map[string]any
}

// NPMRegistry serves packuments and tarballs over loopback HTTP.
type NPMRegistry struct {
	*httptest.Server
	mu        sync.Mutex
	docs      map[string]map[string]any // name → packument
	raw       map[string][]byte         // name → packument served as is
	tarballs  map[string][]byte         // URL path → bytes
	requests  []string
	UserAgent string // of the last request
}

// NewNPMRegistry starts a registry that stops with the test.
func NewNPMRegistry(t testing.TB) *NPMRegistry {
	r := &NPMRegistry{docs: map[string]map[string]any{}, raw: map[string][]byte{}, tarballs: map[string][]byte{}}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// Add publishes p (as dist-tags.latest) and returns its tarball.
func (r *NPMRegistry) Add(p NPMPackage) []byte {
	manifest := map[string]any{"name": p.Name, "version": p.Version}
	maps.Copy(manifest, p.Manifest)
	files := map[string]string{"package.json": mustJSON(manifest)}
	maps.Copy(files, p.Files)
	tgz := Tarball(files)
	short := p.Name[strings.LastIndex(p.Name, "/")+1:]
	path := "/" + p.Name + "/-/" + short + "-" + p.Version + ".tgz"
	sum512, sum1 := sha512.Sum512(tgz), sha1.Sum(tgz)
	dist := map[string]any{
		"tarball":   r.URL + path,
		"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum512[:]),
		"shasum":    hex.EncodeToString(sum1[:]),
	}
	maps.Copy(dist, p.DistMeta)
	v := maps.Clone(manifest)
	maps.Copy(v, p.Meta)
	v["_id"], v["dist"] = p.Name+"@"+p.Version, dist

	r.mu.Lock()
	defer r.mu.Unlock()
	doc := r.docs[p.Name]
	if doc == nil {
		doc = map[string]any{"_id": p.Name, "name": p.Name, "dist-tags": map[string]any{}, "versions": map[string]any{}, "time": map[string]any{}}
		r.docs[p.Name] = doc
	}
	doc["versions"].(map[string]any)[p.Version] = v
	doc["dist-tags"].(map[string]any)["latest"] = p.Version
	doc["time"].(map[string]any)[p.Version] = time.Date(2026, 1, 1+len(doc["versions"].(map[string]any)), 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
	r.tarballs[path] = tgz
	return tgz
}

// SetPackument serves doc as name's packument, as is.
func (r *NPMRegistry) SetPackument(name string, doc []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.raw[name] = doc
}

// Tamper serves data instead of the tarball published for name@version.
func (r *NPMRegistry) Tamper(name, version string, data []byte) {
	short := name[strings.LastIndex(name, "/")+1:]
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tarballs["/"+name+"/-/"+short+"-"+version+".tgz"] = data
}

// Requests are the paths asked for so far.
func (r *NPMRegistry) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests)
}

func (r *NPMRegistry) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req.URL.Path)
	r.UserAgent = req.UserAgent()
	if tgz, ok := r.tarballs[req.URL.Path]; ok {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(tgz)
		return
	}
	name := strings.TrimPrefix(req.URL.Path, "/") // %2F arrives decoded
	if doc, ok := r.raw[name]; ok {
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
		return
	}
	if doc, ok := r.docs[name]; ok {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(mustJSON(doc)))
		return
	}
	http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
}

// Tarball packs files under package/ as npm pack does: gzip'd ustar.
func Tarball(files map[string]string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		body := files[name]
		mode := int64(0o644)
		if strings.HasPrefix(body, "#!") {
			mode = 0o755
		}
		tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: mode, Size: int64(len(body)), Typeflag: tar.TypeReg, ModTime: time.Unix(499162500, 0)})
		tw.Write([]byte(body))
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
