package observer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/sandbox/pkgs"
)

// fakeInstall writes an install tree of size bytes into work/pkg, as
// pkgs.Install leaves one, for the artifact name@1.
func fakeInstall(t *testing.T, work, name string, size int) (*pkgs.Resolved, *pkgs.Installed) {
	t.Helper()
	dir := filepath.Join(work, name, "pkg")
	if err := os.MkdirAll(filepath.Join(dir, "node_modules", name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "node_modules", name, "index.js"), []byte(strings.Repeat("x", size)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &pkgs.Resolved{Spec: pkgs.Spec{Kind: pkgs.NPM, Name: name, Version: "1"}, Artifact: "npm:" + name + "@1", Integrity: "sha512-" + name}
	return r, &pkgs.Installed{Dir: dir, Command: []string{"node", "index.js"}}
}

// TestInstallCacheAcrossFileSystems: a run's work directory is its own
// tmpfs, so the finished install reaches the cache on another file system
// by a copy, and the next run of the same artifact reads it from there.
func TestInstallCacheAcrossFileSystems(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount the run's tmpfs")
	}
	work := t.TempDir()
	unmount, err := boundDir(work, 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmount() })
	c, err := openInstallCache(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	r, in := fakeInstall(t, work, "tiny", 100)
	cached, release, err := c.store(context.Background(), r, in)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if _, err := os.Stat(in.Dir); !os.IsNotExist(err) {
		t.Errorf("the run's tmpfs still holds the copied install (%v)", err)
	}
	if !strings.HasPrefix(cached.Dir, c.dir) {
		t.Fatalf("cached at %s, not under the cache %s", cached.Dir, c.dir)
	}
	again, release := c.load(r)
	if again == nil {
		t.Fatal("the stored install does not load")
	}
	defer release()
	b, err := os.ReadFile(filepath.Join(again.Dir, "node_modules", "tiny", "index.js"))
	if err != nil || len(b) != 100 || again.Command[1] != "index.js" {
		t.Fatalf("loaded %+v: %d bytes, %v", again, len(b), err)
	}
}

// TestInstallCacheBound: the cache keeps at most its bound, evicting the
// least recently used install first and never one a run is using, though
// that run is another process's (a second cache on the same directory);
// an install larger than the whole bound stays where it was, uncached.
func TestInstallCacheBound(t *testing.T) {
	work, dir := t.TempDir(), t.TempDir()
	_, in0 := fakeInstall(t, work, "probe", 1000)
	unit, err := diskBytes(in0.Dir) // what one such install takes on disk
	if err != nil {
		t.Fatal(err)
	}
	ours, err := openInstallCache(dir, 3*unit)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := openInstallCache(dir, 3*unit)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store := func(c *installCache, name string) func() {
		t.Helper()
		r, in := fakeInstall(t, work, name, 1000)
		_, release, err := c.store(ctx, r, in)
		if err != nil {
			t.Fatal(err)
		}
		return release
	}
	cached := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, ours.key(&pkgs.Resolved{Spec: pkgs.Spec{Kind: pkgs.NPM}, Artifact: "npm:" + name + "@1", Integrity: "sha512-" + name})))
		return err == nil
	}
	held := store(theirs, "a") // the other process's run still uses a
	store(ours, "b")()
	store(ours, "c")()
	time.Sleep(10 * time.Millisecond) // the last-use times must differ
	r, _ := fakeInstall(t, work, "b-again", 0)
	r.Artifact, r.Integrity = "npm:b@1", "sha512-b"
	if in, release := ours.load(r); in == nil {
		t.Fatal("b is not cached")
	} else {
		release() // b is now used more recently than c
	}
	store(ours, "d")()
	if !cached("a") || !cached("b") || cached("c") || !cached("d") {
		t.Errorf("after d: a %v b %v c %v d %v; want c evicted", cached("a"), cached("b"), cached("c"), cached("d"))
	}
	held()
	time.Sleep(10 * time.Millisecond)
	store(ours, "e")()
	if cached("a") || !cached("e") {
		t.Errorf("after e: a %v e %v; want a evicted once released", cached("a"), cached("e"))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("transient directories left: %v", left)
	}

	r, in := fakeInstall(t, work, "huge", int(4*unit))
	if _, _, err := ours.store(ctx, r, in); err == nil || !strings.Contains(err.Error(), "more than the cache's") {
		t.Fatalf("storing beyond the bound: %v", err)
	}
	if _, err := os.Stat(filepath.Join(in.Dir, "node_modules", "huge", "index.js")); err != nil {
		t.Errorf("the uncached install is gone from its run: %v", err)
	}
	if cached("huge") {
		t.Error("an install beyond the bound was cached")
	}
}
