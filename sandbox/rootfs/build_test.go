package rootfs

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var timeZero = time.Unix(0, 0)

// testCache is the cache the real builds share: $HISTOR_ROOTFS_CACHE when
// set (scripts/test points it at .cache/rootfs so a machine builds once),
// else a directory of this test run.
func testCache(t *testing.T) *Cache {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a Debian root with mmdebstrap (about a minute); skipped under -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("mmdebstrap builds roots as root here; not running as root")
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		t.Skip("mmdebstrap is not installed")
	}
	dir := os.Getenv("HISTOR_ROOTFS_CACHE")
	if dir == "" {
		dir = t.TempDir()
	}
	return &Cache{Dir: dir}
}

func TestBuildPython(t *testing.T) {
	c := testCache(t)
	r := ensure(t, c, Python)
	if r.Python == "" || !strings.HasPrefix(r.Python, "3.") {
		t.Errorf("python3 version %q", r.Python)
	}
	if r.Node != "" {
		t.Errorf("python root has nodejs %s", r.Node)
	}
	assertRoot(t, r, "usr/bin/python3")
}

func TestBuildNode(t *testing.T) {
	c := testCache(t)
	r := ensure(t, c, Node)
	if r.Node == "" {
		t.Fatal("node root records no nodejs version")
	}
	assertRoot(t, r, "usr/bin/node")
	// The recorded package version is the binary's: Debian's 20.19.2+dfsg-1… runs as v20.19.2.
	out, err := exec.Command("chroot", r.Dir, "/usr/bin/node", "--version").Output()
	if err != nil {
		t.Fatalf("running node in the root: %v", err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	if !strings.HasPrefix(r.Node, v) {
		t.Errorf("node --version says %s, record says %s", v, r.Node)
	}
}

// ensure builds (or reuses) a root, then checks the second Ensure is the
// cached one and Check agrees with the record.
func ensure(t *testing.T, c *Cache, k Kind) *Root {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	r, err := c.Ensure(ctx, k)
	if err != nil {
		t.Fatalf("ensure %s: %v", k, err)
	}
	t.Logf("%s root: %s, %d files, %d bytes, built %s in %.1fs (ensure took %s), node %q python %q",
		k, r.Digest, r.Files, r.Bytes, r.BuiltAt.Format(time.RFC3339), r.BuildSeconds, time.Since(start).Round(time.Millisecond), r.Node, r.Python)
	start = time.Now()
	again, err := c.Ensure(ctx, k)
	if err != nil || again.Digest != r.Digest || !again.BuiltAt.Equal(r.BuiltAt) {
		t.Fatalf("second ensure: %v, %+v", err, again)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("cached ensure took %s", d)
	}
	start = time.Now()
	if _, err := c.Check(k); err != nil {
		t.Errorf("check: %v", err)
	}
	t.Logf("%s root: digest recomputed in %s", k, time.Since(start).Round(time.Millisecond))
	return r
}

func assertRoot(t *testing.T, r *Root, bin string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(r.Dir, bin)); err != nil {
		t.Errorf("root has no /%s: %v", bin, err)
	}
	for _, p := range append(MountPoints, EmptyFiles...) {
		if _, err := os.Stat(filepath.Join(r.Dir, p)); err != nil {
			t.Errorf("mount point /%s missing: %v", p, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(r.Dir, "etc/resolv.conf")); err != nil || fi.Size() != 0 {
		t.Errorf("/etc/resolv.conf is not an empty file: %v", fi)
	}
	if len(r.Dpkg) < 50 || versionOf(r.Dpkg, "bash") == "" {
		t.Errorf("dpkg list of %d packages, bash %q", len(r.Dpkg), versionOf(r.Dpkg, "bash"))
	}
}

// TestBuildFailure: a build that cannot succeed says why, from mmdebstrap's
// own words, and leaves nothing in the cache.
func TestBuildFailure(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to stand in for mmdebstrap")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "mmdebstrap")
	script := "#!/bin/sh\necho 'I: downloading' >&2\necho 'E: cannot fetch trixie from the mirror' >&2\nexit 25\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Cache{Dir: filepath.Join(dir, "cache"), Mmdebstrap: fake}
	_, err := c.Ensure(context.Background(), Python)
	var be *BuildError
	if !errors.As(err, &be) || !strings.Contains(be.Tail, "E: cannot fetch trixie") {
		t.Fatalf("error %v, want a BuildError with mmdebstrap's last line", err)
	}
	entries, _ := os.ReadDir(c.Dir)
	for _, e := range entries {
		if e.Name() != ".lock" {
			t.Errorf("failed build left %s in the cache", e.Name())
		}
	}
}

// TestBuildTimeout: the build is bounded and killed with its children.
func TestBuildTimeout(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "mmdebstrap")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'I: waiting' >&2\nsleep 60 &\nwait\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err := Build(context.Background(), Spec{Kind: Node, Dir: filepath.Join(dir, "root"), Mmdebstrap: fake, Timeout: 300 * time.Millisecond})
	var be *BuildError
	if !errors.As(err, &be) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want a BuildError for the deadline", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("timed-out build returned after %s", d)
	}
}

func TestPackages(t *testing.T) {
	for _, k := range []Kind{Node, Python} {
		p, err := Packages(k)
		if err != nil || len(p) == 0 {
			t.Errorf("%s: %v %v", k, p, err)
		}
	}
	if _, err := Packages("ruby"); err == nil {
		t.Error("unknown kind accepted")
	}
}
