package pkgs

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"path"
	"path/filepath"
	"strings"

	"github.com/histor-observer/histor/sandbox"
)

// maxLocal bounds a local artifact; a registry's default bound.
const maxLocal = 64 << 20

// resolveLocalTarball reads name and version from an npm tarball's
// package.json. The facts are the file's own: no registry stands behind it,
// so provenance and publisher are unknown.
func resolveLocalTarball(spec Spec) (*Resolved, error) {
	data, d, err := readLocal(spec.File, "sha512", maxLocal)
	if err != nil {
		return nil, err
	}
	manifest, err := tarballManifest(data)
	if err != nil {
		return nil, fail(sandbox.StatusRefused, err, "the local tarball has no readable package.json")
	}
	var v npmVersion
	if err := json.Unmarshal(manifest, &v); err != nil {
		return nil, fail(sandbox.StatusRefused, err, "the local tarball's package.json is not JSON")
	}
	if !npmName.MatchString(v.Name) || !version.MatchString(v.Version) {
		return nil, fail(sandbox.StatusRefused, nil, "the local tarball names %q@%q", clip(v.Name, 100), clip(v.Version, 64))
	}
	spec.Name, spec.Version = v.Name, v.Version
	return &Resolved{Spec: spec, Artifact: spec.Artifact(), Integrity: "sha512-" + base64.StdEncoding.EncodeToString(d.want), Facts: v.facts(), check: d}, nil
}

// tarballManifest is the top directory's package.json ("package/" as npm
// packs it, though older tarballs use other names).
func tarballManifest(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, err
		}
		if _, rest, ok := strings.Cut(strings.TrimPrefix(h.Name, "./"), "/"); ok && rest == "package.json" && h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(io.LimitReader(tr, 1<<20+1))
			if err == nil && len(b) > 1<<20 {
				err = errors.New("package.json larger than 1 MiB")
			}
			return b, err
		}
	}
}

// resolveLocalWheel reads name and version from the wheel's file name and
// its dependencies from its METADATA.
func resolveLocalWheel(spec Spec) (*Resolved, error) {
	m := wheelName.FindStringSubmatch(filepath.Base(spec.File))
	if m == nil || !version.MatchString(m[2]) {
		return nil, fail(sandbox.StatusRefused, nil, "%q is not a wheel file name", clip(filepath.Base(spec.File), 100))
	}
	data, d, err := readLocal(spec.File, "sha256", maxLocal)
	if err != nil {
		return nil, err
	}
	requires, err := wheelRequires(data, m[1]+"-"+m[2]+".dist-info/METADATA")
	if err != nil {
		return nil, fail(sandbox.StatusRefused, err, "the local wheel has no readable METADATA")
	}
	spec.Name, spec.Version = NormalisePyPI(m[1]), m[2]
	return &Resolved{
		Spec: spec, Artifact: spec.Artifact(), Integrity: "sha256:" + hex.EncodeToString(d.want),
		Filename: filepath.Base(spec.File), Facts: pypiFacts(requires, Unknown), check: d,
	}, nil
}

// wheelRequires is the Requires-Dist lines of a wheel's METADATA.
func wheelRequires(data []byte, metadata string) ([]string, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	f, err := zr.Open(path.Clean(metadata))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(io.LimitReader(f, 4<<20))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break // the headers end; the description follows
		}
		if v, ok := strings.CutPrefix(line, "Requires-Dist:"); ok {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out, sc.Err()
}
