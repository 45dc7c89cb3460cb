package pkgs

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/histor-observer/histor/sandbox"
)

// digest is what an artifact must hash to, as its registry published it.
type digest struct {
	algo string // sha512, sha256 or sha1
	want []byte
}

func (d digest) hash() hash.Hash {
	switch d.algo {
	case "sha512":
		return sha512.New()
	case "sha256":
		return sha256.New()
	}
	return sha1.New()
}

// npmDigest takes the strongest hash of an SRI integrity string, else the
// hex shasum. sha1 is the registry's oldest form, kept only for packages
// published before integrity existed.
func npmDigest(integrity, shasum string) (digest, bool) {
	best := digest{}
	rank := map[string]int{"sha1": 1, "sha256": 2, "sha384": 0, "sha512": 3}
	for _, f := range strings.Fields(integrity) {
		algo, b64, ok := strings.Cut(f, "-")
		if !ok || rank[algo] == 0 || rank[algo] <= rank[best.algo] {
			continue
		}
		if q := strings.IndexByte(b64, '?'); q >= 0 {
			b64 = b64[:q] // SRI options carry no hash
		}
		if want, err := base64.StdEncoding.DecodeString(b64); err == nil {
			best = digest{algo: algo, want: want}
		}
	}
	if best.algo != "" {
		return best, true
	}
	if want, err := hex.DecodeString(shasum); err == nil && len(want) == sha1.Size {
		return digest{algo: "sha1", want: want}, true
	}
	return digest{}, false
}

func sha256Digest(hexsum string) (digest, bool) {
	want, err := hex.DecodeString(hexsum)
	return digest{algo: "sha256", want: want}, err == nil && len(want) == sha256.Size
}

// download writes u to path, within the artifact bound, and refuses (and
// removes) it unless it hashes to d. An artifact the registry answers for
// but that is missing, oversized or not what was published is
// install-failed; a registry that fails (no answer, 5xx, 429) says nothing
// about the package: inspection-failed, and the job is tried again.
func (p *Packages) download(ctx context.Context, u, path string, d digest) error {
	res, err := p.open(ctx, u, "")
	if err != nil {
		return fail(sandbox.StatusInspectionFailed, err, "downloading the artifact failed")
	}
	defer res.Body.Close()
	if res.StatusCode >= 500 || res.StatusCode == http.StatusTooManyRequests {
		return fail(sandbox.StatusInspectionFailed, nil, "downloading the artifact: registry answered %d", res.StatusCode)
	}
	if res.StatusCode/100 != 2 {
		return fail(sandbox.StatusInstallFailed, nil, "downloading the artifact: registry answered %d", res.StatusCode)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	err = copyChecked(f, res.Body, d, p.cfg.MaxArtifact)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("writing %s: %w", path, cerr)
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

var errMismatch = errors.New("artifact digest mismatch")

func copyChecked(w io.Writer, r io.Reader, d digest, limit int64) error {
	h := d.hash()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(r, limit+1))
	switch {
	case err != nil:
		return fail(sandbox.StatusInstallFailed, err, "downloading the artifact failed")
	case n > limit:
		return fail(sandbox.StatusInstallFailed, &TooLargeError{Limit: limit}, "the artifact is larger than %d bytes", limit)
	case !bytes.Equal(h.Sum(nil), d.want):
		return fail(sandbox.StatusInstallFailed, errMismatch, "the artifact does not match the %s digest its registry published", d.algo)
	}
	return nil
}

// readLocal reads a local artifact within limit and the digest it must
// keep until it is installed.
func readLocal(file, algo string, limit int64) ([]byte, digest, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, digest{}, fail(sandbox.StatusNotFound, err, "the local artifact cannot be read")
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, digest{}, fail(sandbox.StatusNotFound, err, "the local artifact cannot be read")
	}
	if int64(len(b)) > limit {
		return nil, digest{}, fail(sandbox.StatusRefused, nil, "the local artifact is larger than %d bytes", limit)
	}
	d := digest{algo: algo}
	h := d.hash()
	h.Write(b)
	d.want = h.Sum(nil)
	return b, d, nil
}
