package observer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/histor-observer/histor/sandbox/pkgs"
)

// installCache keeps finished host installs keyed by the artifact's
// integrity, which the registry published and Install checked: the same
// key is the same bytes, so reusing the tree is reusing the install.
//
//	<key>/pkg            the installed tree, never written after it is in place
//	<key>/installed.json Command, Env and Record of the install; its
//	                     modification time is the entry's last use, and a
//	                     run holds a shared flock on it while it uses the tree
//	<key>/bytes          the tree's disk use, for the bound
//
// The cache holds at most max bytes: storing an entry evicts the least
// recently used ones beyond it, never one a run holds (of this process or
// another sharing the directory). An entry is evicted by renaming it out
// of place under an exclusive lock, so a load never sees half of one.
type installCache struct {
	dir string
	max int64
}

// Prefixes of the cache's transient directories: a store in progress and
// an entry being removed. Those older than transientGrace are a dead
// process's and are removed when a cache opens.
const (
	storingPrefix  = ".tmp-"
	evictingPrefix = ".evict-"
	transientGrace = 10 * time.Minute
)

func openInstallCache(dir string, max int64) (*installCache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating install cache: %w", err)
	}
	c := &installCache{dir: dir, max: max}
	c.removeTransient(time.Now())
	return c, nil
}

func (c *installCache) removeTransient(now time.Time) {
	des, _ := os.ReadDir(c.dir)
	for _, de := range des {
		name := de.Name()
		if !strings.HasPrefix(name, storingPrefix) && !strings.HasPrefix(name, evictingPrefix) {
			continue
		}
		if fi, err := de.Info(); err == nil && now.Sub(fi.ModTime()) > transientGrace {
			os.RemoveAll(filepath.Join(c.dir, name))
		}
	}
}

func (c *installCache) key(r *pkgs.Resolved) string {
	sum := sha256.Sum256([]byte(string(r.Spec.Kind) + "\n" + r.Artifact + "\n" + r.Integrity))
	return hex.EncodeToString(sum[:16])
}

// hold takes a shared lock on an entry's installed.json; the returned
// release drops it. A run holds it while it uses the tree.
func hold(meta string) (*os.File, func(), error) {
	f, err := os.Open(meta)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		f.Close()
		return nil, nil, err
	}
	var once sync.Once
	return f, func() { once.Do(func() { f.Close() }) }, nil
}

// load returns the cached install of r, held, or nil.
func (c *installCache) load(r *pkgs.Resolved) (*pkgs.Installed, func()) {
	dir := filepath.Join(c.dir, c.key(r))
	meta := filepath.Join(dir, "installed.json")
	f, release, err := hold(meta)
	if err != nil {
		return nil, nil
	}
	// Evicted between the open and the lock: the file is no longer there.
	if !samePlace(f, meta) {
		release()
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	var in pkgs.Installed
	if err != nil || json.Unmarshal(data, &in) != nil {
		release()
		return nil, nil
	}
	now := time.Now()
	os.Chtimes(meta, now, now) // the last use, for eviction; best effort
	in.Dir = filepath.Join(dir, "pkg")
	return &in, release
}

// samePlace reports whether path still names f's file.
func samePlace(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// store moves a finished install (work/pkg) into the cache, copying it
// when the work directory is another file system, and returns it as cached
// and held. A concurrent store of the same key wins or loses as a whole.
func (c *installCache) store(ctx context.Context, r *pkgs.Resolved, in *pkgs.Installed) (*pkgs.Installed, func(), error) {
	tmp, err := os.MkdirTemp(c.dir, storingPrefix)
	if err != nil {
		return nil, nil, fmt.Errorf("caching install: %w", err)
	}
	defer os.RemoveAll(tmp)
	pkg := filepath.Join(tmp, "pkg")
	copied := false
	if err := os.Rename(in.Dir, pkg); errors.Is(err, syscall.EXDEV) {
		err, copied = copyTree(ctx, in.Dir, pkg), true
	} else if err == nil {
		defer os.Rename(pkg, in.Dir) // a failed store leaves the install where it was
	}
	if err != nil {
		return nil, nil, fmt.Errorf("caching install: %w", err)
	}
	size, err := diskBytes(pkg)
	if err == nil && size > c.max {
		err = fmt.Errorf("%d bytes is more than the cache's %d", size, c.max)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("caching install: %w", err)
	}
	data, err := json.Marshal(in)
	if err == nil {
		err = os.WriteFile(filepath.Join(tmp, "installed.json"), data, 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(tmp, "bytes"), []byte(strconv.FormatInt(size, 10)), 0o644)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("caching install: %w", err)
	}
	// Held before it is in place, so no eviction can take it from the run.
	_, release, err := hold(filepath.Join(tmp, "installed.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("caching install: %w", err)
	}
	key := c.key(r)
	c.evict(size, key)
	final := filepath.Join(c.dir, key)
	if err := os.Rename(tmp, final); err != nil {
		release()
		if cached, rel := c.load(r); cached != nil { // another run stored it first
			return cached, rel, nil
		}
		return nil, nil, fmt.Errorf("caching install: %w", err)
	}
	if copied {
		os.RemoveAll(in.Dir) // the run's tmpfs copy: memory, not needed now
	}
	out := *in
	out.Dir = filepath.Join(final, "pkg")
	return &out, release, nil
}

// entry is one cached install as eviction sees it.
type entry struct {
	key  string
	used time.Time // zero: no readable installed.json
	size int64
}

// evict removes least recently used entries that no run holds (and not
// keep) until incoming more bytes fit under the bound. An entry whose
// installed.json cannot be read goes first. Failures are skipped: the
// bound is then exceeded until a later store, never the store refused.
func (c *installCache) evict(incoming int64, keep string) {
	entries, total := c.entries(keep)
	total += incoming
	sort.Slice(entries, func(i, j int) bool { return entries[i].used.Before(entries[j].used) })
	for _, e := range entries {
		if total <= c.max && !e.used.IsZero() {
			return
		}
		if c.remove(e.key) {
			total -= e.size
		}
	}
}

// entries lists the cache's entries but keep, with their total size.
func (c *installCache) entries(keep string) ([]entry, int64) {
	des, _ := os.ReadDir(c.dir)
	var out []entry
	var total int64
	for _, de := range des {
		if !de.IsDir() || strings.HasPrefix(de.Name(), ".") || de.Name() == keep {
			continue
		}
		e := entry{key: de.Name()}
		dir := filepath.Join(c.dir, e.key)
		if fi, err := os.Stat(filepath.Join(dir, "installed.json")); err == nil {
			e.used = fi.ModTime()
		}
		if b, err := os.ReadFile(filepath.Join(dir, "bytes")); err == nil {
			e.size, _ = strconv.ParseInt(string(b), 10, 64)
		} else if n, err := diskBytes(filepath.Join(dir, "pkg")); err == nil {
			e.size = n // an entry from before sizes were kept
		}
		total += e.size
		out = append(out, e)
	}
	return out, total
}

// remove takes key out of place if no run holds it, then deletes it, and
// reports whether it went.
func (c *installCache) remove(key string) bool {
	dir := filepath.Join(c.dir, key)
	if f, err := os.Open(filepath.Join(dir, "installed.json")); err == nil {
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
			f.Close()
			return false // a run holds it
		}
		defer f.Close()
	}
	gone := filepath.Join(c.dir, evictingPrefix+key+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Rename(dir, gone); err != nil {
		return false
	}
	os.RemoveAll(gone)
	return true
}

// diskBytes is what the files under dir take on disk.
func diskBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("measuring %s: %w", filepath.Base(dir), err)
	}
	return n, nil
}

// install is the install stage, through the cache when there is one. The
// returned release ends the run's use of a cached tree (never nil).
func (o *Observer) install(ctx context.Context, r *pkgs.Resolved, work string) (*pkgs.Installed, func(), error) {
	none := func() {}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, none, fmt.Errorf("creating install dir: %w", err)
	}
	if o.cache != nil && r.Integrity != "" {
		began := time.Now()
		if in, release := o.cache.load(r); in != nil {
			in.Record.Seconds = since(began)
			in.Record.Detail = "installed before; reused by integrity"
			return in, release, nil
		}
	}
	in, err := o.packages.Install(ctx, r, work)
	if err != nil || o.cache == nil || r.Integrity == "" {
		return in, none, err
	}
	cached, release, cerr := o.cache.store(ctx, r, in)
	if cerr != nil {
		o.log.Warn("install cache", "err", cerr)
		return in, none, nil
	}
	return cached, release, nil
}

// copyTree copies src to dst (which must not exist), keeping modes and
// links, for a tree the install scripts may write.
func copyTree(ctx context.Context, src, dst string) error {
	out, err := exec.CommandContext(ctx, "cp", "-a", "--", src, dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("copying %s: %v: %s", filepath.Base(src), err, pkgs.Tail(string(out), 200))
	}
	return nil
}
