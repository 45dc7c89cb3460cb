package rootfs

import (
	"archive/tar"
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Entry is one line of a root's manifest: what a path is, so two roots
// with different digests can be compared file by file.
type Entry struct {
	Path   string      // relative to the root, "/"-separated, "." for the root itself
	Mode   fs.FileMode // type and permission bits (setuid, setgid, sticky included)
	Size   int64       // bytes of a regular file, else 0
	SHA256 string      // hex of a regular file's content, else ""
	Link   string      // a symlink's target, a device's "major,minor", else ""
}

// String is the manifest line: mode, size, hash ("-" if none), path and,
// for a link or device, " -> " and its target. Paths with a newline are
// quoted so one entry is always one line.
func (e Entry) String() string {
	sum := e.SHA256
	if sum == "" {
		sum = "-"
	}
	s := fmt.Sprintf("%s %d %s %s", e.Mode, e.Size, sum, quotePath(e.Path))
	if e.Link != "" {
		s += " -> " + quotePath(e.Link)
	}
	return s
}

func quotePath(p string) string {
	if strings.ContainsAny(p, "\n\r\\\" ") {
		return fmt.Sprintf("%q", p)
	}
	return p
}

// Manifest is a root's entries in walk order (lexical per directory, the
// order the tar stream has).
type Manifest []Entry

// WriteTo writes one line per entry.
func (m Manifest) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	var n int64
	for _, e := range m {
		k, err := bw.WriteString(e.String() + "\n")
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, bw.Flush()
}

// Digest returns "sha256:<hex>" of the deterministic tar stream of the tree
// at dir and its manifest. The stream holds every entry in lexical order per
// directory, with mtimes zero, uid and gid zero, no user or group names and
// no access or change times, so it depends only on names, types, modes,
// link targets, device numbers and contents: two builds of the same package
// versions give the same digest. Sockets are left out (tar cannot hold them).
func Digest(dir string) (string, Manifest, error) {
	h := sha256.New()
	tw := tar.NewWriter(h)
	var m Manifest
	fileHash := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		e, err := writeEntry(tw, fileHash, path, filepath.ToSlash(rel))
		if err != nil {
			return fmt.Errorf("adding %s: %w", rel, err)
		}
		if e != nil {
			m = append(m, *e)
		}
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("digesting %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return "", nil, fmt.Errorf("digesting %s: %w", dir, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), m, nil
}

// writeEntry writes one path's header (and content) and returns its
// manifest entry; nil for what the stream leaves out.
func writeEntry(tw *tar.Writer, fileHash hash.Hash, path, rel string) (*Entry, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	mode := fi.Mode()
	if mode&fs.ModeSocket != 0 {
		return nil, nil
	}
	e := &Entry{Path: rel, Mode: mode}
	hdr := &tar.Header{Name: rel, Mode: tarMode(mode), Format: tar.FormatPAX}
	switch {
	case mode.IsDir():
		hdr.Typeflag, hdr.Name = tar.TypeDir, rel+"/"
	case mode.IsRegular():
		hdr.Typeflag, hdr.Size, e.Size = tar.TypeReg, fi.Size(), fi.Size()
	case mode&fs.ModeSymlink != 0:
		if e.Link, err = os.Readlink(path); err != nil {
			return nil, err
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.Link
	case mode&fs.ModeDevice != 0:
		hdr.Typeflag = tar.TypeBlock
		if mode&fs.ModeCharDevice != 0 {
			hdr.Typeflag = tar.TypeChar
		}
		hdr.Devmajor, hdr.Devminor = deviceNumbers(fi)
		e.Link = fmt.Sprintf("%d,%d", hdr.Devmajor, hdr.Devminor)
	case mode&fs.ModeNamedPipe != 0:
		hdr.Typeflag = tar.TypeFifo
	default:
		return nil, fmt.Errorf("unsupported file type %s", mode.Type())
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if hdr.Typeflag == tar.TypeReg {
		if e.SHA256, err = copyContent(tw, fileHash, path, fi.Size()); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// copyContent streams a regular file into the tar and returns its hex
// SHA-256. A file that changed size while being read is an error: the
// digest would describe no state the tree was ever in.
func copyContent(tw *tar.Writer, fileHash hash.Hash, path string, size int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fileHash.Reset()
	n, err := io.Copy(io.MultiWriter(tw, fileHash), io.LimitReader(f, size+1))
	if err != nil {
		return "", err
	}
	if n != size {
		return "", fmt.Errorf("file changed size while being read (%d bytes, %d expected)", n, size)
	}
	return hex.EncodeToString(fileHash.Sum(nil)), nil
}

// tarMode is the tar mode field: permissions plus setuid, setgid, sticky.
func tarMode(m fs.FileMode) int64 {
	v := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		v |= 0o1000
	}
	return v
}
