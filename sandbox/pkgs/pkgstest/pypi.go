package pkgstest

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Wheel is one pure-Python wheel to build.
type Wheel struct {
	Name    string
	Version string
	// Files are the wheel's importable files, e.g. "demo/__init__.py".
	Files map[string]string
	// Requires are Requires-Dist lines; RequiresPython Requires-Python.
	Requires       []string
	RequiresPython string
	// EntryPoints is entry_points.txt as written.
	EntryPoints string
}

// Filename is the wheel's file name, py3-none-any.
func (w Wheel) Filename() string {
	return escapeDist(w.Name) + "-" + w.Version + "-py3-none-any.whl"
}

var distRun = regexp.MustCompile(`[-_.]+`)

func escapeDist(name string) string { return distRun.ReplaceAllString(name, "_") }

// Normalise is PEP 503's project name normalisation.
func Normalise(name string) string { return strings.ToLower(distRun.ReplaceAllString(name, "-")) }

// Build zips the wheel: its files, and a dist-info with METADATA, WHEEL,
// entry_points.txt and a RECORD that hashes them.
func (w Wheel) Build() []byte {
	info := escapeDist(w.Name) + "-" + w.Version + ".dist-info/"
	meta := "Metadata-Version: 2.1\nName: " + w.Name + "\nVersion: " + w.Version + "\n"
	if w.RequiresPython != "" {
		meta += "Requires-Python: " + w.RequiresPython + "\n"
	}
	for _, r := range w.Requires {
		meta += "Requires-Dist: " + r + "\n"
	}
	files := maps.Clone(w.Files)
	if files == nil {
		files = map[string]string{}
	}
	files[info+"METADATA"] = meta + "\n" + w.Name + " built by a test.\n"
	files[info+"WHEEL"] = "Wheel-Version: 1.0\nGenerator: pkgstest\nRoot-Is-Purelib: true\nTag: py3-none-any\n\n"
	if w.EntryPoints != "" {
		files[info+"entry_points.txt"] = w.EntryPoints
	}
	var record strings.Builder
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		sum := sha256.Sum256([]byte(files[name]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", name, base64.RawURLEncoding.EncodeToString(sum[:]), len(files[name]))
		f, _ := zw.Create(name)
		f.Write([]byte(files[name]))
	}
	record.WriteString(info + "RECORD,,\n")
	f, _ := zw.Create(info + "RECORD")
	f.Write([]byte(record.String()))
	zw.Close()
	return buf.Bytes()
}

type pypiFile struct {
	name, version, filename, kind, requiresPython string
	requires                                      []string
	data                                          []byte
	sha256                                        string
}

// PyPIIndex serves /simple/ and /simple/<project>/ (PEP 503, with
// #sha256= fragments and data-requires-python), the JSON API at
// /pypi/<project>[/<version>]/json, the files at /files/<name>, and the
// integrity API at /integrity/<project>/<version>/<file>/provenance
// (404 unless SetProvenance says otherwise).
type PyPIIndex struct {
	*httptest.Server
	mu         sync.Mutex
	files      []*pypiFile
	provenance map[string]int
	served     map[string][]byte // file name → bytes served, when tampered
}

// NewPyPIIndex starts an index that stops with the test.
func NewPyPIIndex(t testing.TB) *PyPIIndex {
	x := &PyPIIndex{provenance: map[string]int{}, served: map[string][]byte{}}
	x.Server = httptest.NewServer(http.HandlerFunc(x.serve))
	t.Cleanup(x.Close)
	return x
}

// IndexURL is the simple index's base, for pip's --index-url.
func (x *PyPIIndex) IndexURL() string { return x.URL + "/simple/" }

// AddWheel builds w and publishes it; the latest version is the last added.
func (x *PyPIIndex) AddWheel(w Wheel) string {
	data := w.Build()
	x.add(&pypiFile{name: w.Name, version: w.Version, filename: w.Filename(), kind: "bdist_wheel",
		requiresPython: w.RequiresPython, requires: w.Requires, data: data})
	return w.Filename()
}

// AddSdist publishes a source distribution only (a tarball that is never
// built: its content does not matter).
func (x *PyPIIndex) AddSdist(name, version string) string {
	fn := escapeDist(name) + "-" + version + ".tar.gz"
	x.add(&pypiFile{name: name, version: version, filename: fn, kind: "sdist", data: []byte("an sdist")})
	return fn
}

func (x *PyPIIndex) add(f *pypiFile) {
	sum := sha256.Sum256(f.data)
	f.sha256 = hex.EncodeToString(sum[:])
	x.mu.Lock()
	defer x.mu.Unlock()
	x.files = append(x.files, f)
}

// SetProvenance makes the integrity API answer code for filename.
func (x *PyPIIndex) SetProvenance(filename string, code int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.provenance[filename] = code
}

// Tamper serves data for filename while the index keeps its published digest.
func (x *PyPIIndex) Tamper(filename string, data []byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.served[filename] = data
}

func (x *PyPIIndex) serve(w http.ResponseWriter, r *http.Request) {
	x.mu.Lock()
	defer x.mu.Unlock()
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/simple/":
		x.simpleRoot(w)
	case len(parts) == 2 && parts[0] == "simple":
		x.simpleProject(w, r, parts[1])
	case len(parts) == 2 && parts[0] == "files":
		x.file(w, parts[1])
	case (len(parts) == 3 || len(parts) == 4) && parts[0] == "pypi" && parts[len(parts)-1] == "json":
		x.jsonAPI(w, parts[1], strings.Join(parts[2:len(parts)-1], ""))
	case len(parts) == 5 && parts[0] == "integrity" && parts[4] == "provenance":
		x.integrity(w, parts[3])
	default:
		http.NotFound(w, r)
	}
}

func (x *PyPIIndex) simpleRoot(w http.ResponseWriter) {
	seen := map[string]bool{}
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><body>\n")
	for _, f := range x.files {
		if n := Normalise(f.name); !seen[n] {
			seen[n] = true
			fmt.Fprintf(&b, "<a href=\"/simple/%s/\">%s</a>\n", n, n)
		}
	}
	b.WriteString("</body></html>\n")
	w.Header().Set("Content-Type", "text/html")
	w.Write([]byte(b.String()))
}

func (x *PyPIIndex) simpleProject(w http.ResponseWriter, r *http.Request, project string) {
	if project != Normalise(project) {
		http.Redirect(w, r, "/simple/"+Normalise(project)+"/", http.StatusMovedPermanently)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><body><h1>Links for %s</h1>\n", project)
	n := 0
	for _, f := range x.files {
		if Normalise(f.name) != project {
			continue
		}
		n++
		attr := ""
		if f.requiresPython != "" {
			attr = ` data-requires-python="` + html.EscapeString(f.requiresPython) + `"`
		}
		fmt.Fprintf(&b, "<a href=\"/files/%s#sha256=%s\"%s>%s</a><br/>\n", f.filename, f.sha256, attr, f.filename)
	}
	if n == 0 {
		http.NotFound(w, nil)
		return
	}
	b.WriteString("</body></html>\n")
	w.Header().Set("Content-Type", "text/html")
	w.Write([]byte(b.String()))
}

func (x *PyPIIndex) file(w http.ResponseWriter, name string) {
	for _, f := range x.files {
		if f.filename == name {
			data, ok := x.served[name]
			if !ok {
				data = f.data
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(data)
			return
		}
	}
	http.NotFound(w, nil)
}

// jsonAPI answers as https://docs.pypi.org/api/json/ describes: info and
// the version's urls (the latest version when none is named).
func (x *PyPIIndex) jsonAPI(w http.ResponseWriter, project, version string) {
	var files []*pypiFile
	for _, f := range x.files {
		if Normalise(f.name) == Normalise(project) && (version == "" || f.version == version) {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		http.Error(w, `{"message": "Not Found"}`, http.StatusNotFound)
		return
	}
	latest := files[len(files)-1]
	urls := []map[string]any{}
	for _, f := range files {
		if f.version != latest.version {
			continue
		}
		urls = append(urls, map[string]any{
			"filename": f.filename, "url": x.URL + "/files/" + f.filename, "packagetype": f.kind,
			"digests":         map[string]string{"sha256": f.sha256},
			"requires_python": nilIfEmpty(f.requiresPython), "size": len(f.data),
			"upload_time_iso_8601": "2026-01-02T03:04:05.000000Z", "yanked": false, "yanked_reason": nil,
		})
	}
	info := map[string]any{"name": latest.name, "version": latest.version, "requires_dist": nilIfNone(latest.requires),
		"requires_python": nilIfEmpty(latest.requiresPython), "summary": latest.name + " built by a test", "yanked": false}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(mustJSON(map[string]any{"info": info, "urls": urls, "last_serial": len(x.files), "vulnerabilities": []any{}})))
}

func (x *PyPIIndex) integrity(w http.ResponseWriter, filename string) {
	code, ok := x.provenance[filename]
	if !ok || code == http.StatusNotFound {
		http.Error(w, `{"message": "No provenance available"}`, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.pypi.integrity.v1+json")
	w.WriteHeader(code)
	if code == http.StatusOK {
		w.Write([]byte(`{"version":1,"attestation_bundles":[{"publisher":{"kind":"GitHub","repository":"example/demo","workflow":"release.yml"},"attestations":[]}]}`))
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nilIfNone(s []string) any {
	if len(s) == 0 {
		return nil
	}
	return s
}
