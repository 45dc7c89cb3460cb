package rootfs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree writes a small root: a directory, files, a symlink, a setuid file.
func tree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "usr/bin"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "usr/bin/node"), []byte("#!node\n"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "etc/hostname"), []byte("histor\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "etc/empty"), nil, 0o600))
	must(os.Symlink("usr/bin", filepath.Join(dir, "bin")))
	must(os.WriteFile(filepath.Join(dir, "usr/bin/su"), []byte("su"), 0o755))
	must(os.Chmod(filepath.Join(dir, "usr/bin/su"), 0o755|os.ModeSetuid))
	return dir
}

func digestOf(t *testing.T, dir string) (string, Manifest) {
	t.Helper()
	d, m, err := Digest(dir)
	if err != nil {
		t.Fatalf("digest: %v", err)
	}
	return d, m
}

func TestDigestDeterministic(t *testing.T) {
	a, b := tree(t), tree(t)
	// Different mtimes must not matter.
	if err := os.Chtimes(filepath.Join(b, "etc/hostname"), timeZero, timeZero); err != nil {
		t.Fatal(err)
	}
	da, ma := digestOf(t, a)
	db, mb := digestOf(t, b)
	if da != db {
		t.Errorf("two equal trees: %s and %s", da, db)
	}
	if !strings.HasPrefix(da, "sha256:") || len(da) != len("sha256:")+64 {
		t.Errorf("digest %q is not sha256:<hex>", da)
	}
	var wa, wb bytes.Buffer
	ma.WriteTo(&wa)
	mb.WriteTo(&wb)
	if wa.String() != wb.String() {
		t.Errorf("manifests differ:\n%s\n%s", wa.String(), wb.String())
	}
	want := []string{".", "bin", "etc", "etc/empty", "etc/hostname", "usr", "usr/bin", "usr/bin/node", "usr/bin/su"}
	if len(ma) != len(want) {
		t.Fatalf("manifest has %d entries, want %d:\n%s", len(ma), len(want), wa.String())
	}
	for i, e := range ma {
		if e.Path != want[i] {
			t.Errorf("entry %d is %q, want %q", i, e.Path, want[i])
		}
	}
	if !strings.Contains(wa.String(), "Lrwxrwxrwx 0 - bin -> usr/bin\n") ||
		!strings.Contains(wa.String(), "-rw-r--r-- 7 ") || !strings.Contains(wa.String(), "urwxr-xr-x 2 ") {
		t.Errorf("manifest lines not as expected:\n%s", wa.String())
	}
}

// TestDigestChanges: every kind of change to the tree changes the digest.
func TestDigestChanges(t *testing.T) {
	base, _ := digestOf(t, tree(t))
	changes := map[string]func(dir string) error{
		"one byte": func(d string) error { return os.WriteFile(filepath.Join(d, "etc/hostname"), []byte("histoR\n"), 0o644) },
		"mode":     func(d string) error { return os.Chmod(filepath.Join(d, "etc/hostname"), 0o600) },
		"setuid":   func(d string) error { return os.Chmod(filepath.Join(d, "usr/bin/su"), 0o755) },
		"name": func(d string) error {
			return os.Rename(filepath.Join(d, "etc/hostname"), filepath.Join(d, "etc/hostnamf"))
		},
		"symlink target": func(d string) error {
			if err := os.Remove(filepath.Join(d, "bin")); err != nil {
				return err
			}
			return os.Symlink("usr/sbin", filepath.Join(d, "bin"))
		},
		"empty file added": func(d string) error { return os.WriteFile(filepath.Join(d, "etc/resolv.conf"), nil, 0o644) },
		"empty dir added":  func(d string) error { return os.Mkdir(filepath.Join(d, "tmp"), 0o755) },
		"file removed":     func(d string) error { return os.Remove(filepath.Join(d, "etc/empty")) },
		"file to dir": func(d string) error {
			if err := os.Remove(filepath.Join(d, "etc/empty")); err != nil {
				return err
			}
			return os.Mkdir(filepath.Join(d, "etc/empty"), 0o600)
		},
	}
	seen := map[string]string{base: "base"}
	for name, change := range changes {
		dir := tree(t)
		if err := change(dir); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d, _ := digestOf(t, dir)
		if prev, ok := seen[d]; ok {
			t.Errorf("%s: digest %s equals that of %s", name, d, prev)
		}
		seen[d] = name
	}
}

// TestDigestMissing: a tree that is not there is an error, not a digest of nothing.
func TestDigestMissing(t *testing.T) {
	if _, _, err := Digest(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Error("digest of a missing directory succeeded")
	}
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 32}
	for i := 0; i < 10; i++ {
		tb.Write([]byte("line of output\n"))
	}
	tb.Write([]byte("E: last \x1b[1mwords\n"))
	got := tb.lastLines(2)
	if !strings.HasSuffix(got, "E: last [1mwords") || len(tb.buf) > 32 {
		t.Errorf("tail %q (buffer %d bytes)", got, len(tb.buf))
	}
}
