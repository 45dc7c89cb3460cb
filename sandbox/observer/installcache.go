package observer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/histor-observer/histor/sandbox/pkgs"
)

// installCache keeps finished host installs keyed by the artifact's
// integrity, which the registry published and Install checked: the same
// key is the same bytes, so reusing the tree is reusing the install.
//
//	<key>/pkg            the installed tree, never written after it is in place
//	<key>/installed.json Command, Env and Record of the install; its
//	                     modification time is the entry's last use
//	<key>/bytes          the tree's size, for the bound
//
// The cache holds at most max bytes: storing an entry evicts the least
// recently used ones beyond it, never one a run of this process is using.
type installCache struct {
	dir string
	max int64

	mu    sync.Mutex
	inUse map[string]int
}

func openInstallCache(dir string, max int64) (*installCache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating install cache: %w", err)
	}
	return &installCache{dir: dir, max: max, inUse: map[string]int{}}, nil
}

func (c *installCache) key(r *pkgs.Resolved) string {
	sum := sha256.Sum256([]byte(string(r.Spec.Kind) + "\n" + r.Artifact + "\n" + r.Integrity))
	return hex.EncodeToString(sum[:16])
}

// pin marks key in use until the returned release is called.
func (c *installCache) pin(key string) (release func()) {
	c.mu.Lock()
	c.inUse[key]++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			if c.inUse[key]--; c.inUse[key] <= 0 {
				delete(c.inUse, key)
			}
			c.mu.Unlock()
		})
	}
}

// load returns the cached install of r pinned, or nil.
func (c *installCache) load(r *pkgs.Resolved) (*pkgs.Installed, func()) {
	key := c.key(r)
	release := c.pin(key)
	dir := filepath.Join(c.dir, key)
	meta := filepath.Join(dir, "installed.json")
	data, err := os.ReadFile(meta)
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

// store moves a finished install (work/pkg) into the cache, copying it
// when the work directory is another file system, and returns it as cached
// and pinned. A concurrent store of the same key wins or loses as a whole.
func (c *installCache) store(ctx context.Context, r *pkgs.Resolved, in *pkgs.Installed) (*pkgs.Installed, func(), error) {
	tmp, err := os.MkdirTemp(c.dir, ".tmp-")
	if err != nil {
		return nil, nil, fmt.Errorf("caching install: %w", err)
	}
	defer os.RemoveAll(tmp)
	pkg := filepath.Join(tmp, "pkg")
	if err := os.Rename(in.Dir, pkg); errors.Is(err, syscall.EXDEV) {
		err = copyTree(ctx, in.Dir, pkg)
	} else if err == nil {
		defer os.Rename(pkg, in.Dir) // a failed store leaves the install where it was
	}
	if err != nil {
		return nil, nil, fmt.Errorf("caching install: %w", err)
	}
	size, err := treeBytes(pkg)
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
	key := c.key(r)
	release := c.pin(key)
	if err := c.evict(size, key); err != nil {
		release()
		return nil, nil, fmt.Errorf("caching install: %w", err)
	}
	final := filepath.Join(c.dir, key)
	if err := os.Rename(tmp, final); err != nil {
		release()
		if cached, rel := c.load(r); cached != nil { // another run stored it first
			return cached, rel, nil
		}
		return nil, nil, fmt.Errorf("caching install: %w", err)
	}
	out := *in
	out.Dir = filepath.Join(final, "pkg")
	return &out, release, nil
}

// entry is one cached install as eviction sees it.
type entry struct {
	key  string
	used time.Time
	size int64
}

// evict removes least recently used entries not in use (and not keep)
// until incoming more bytes fit under the bound. An entry without a
// readable size is removed first: a store that did not finish.
func (c *installCache) evict(incoming int64, keep string) error {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("listing the install cache: %w", err)
	}
	var entries []entry
	total := incoming
	for _, de := range des {
		if !de.IsDir() || de.Name()[0] == '.' || de.Name() == keep {
			continue
		}
		e := entry{key: de.Name()}
		if fi, err := os.Stat(filepath.Join(c.dir, e.key, "installed.json")); err == nil {
			e.used = fi.ModTime()
		}
		if b, err := os.ReadFile(filepath.Join(c.dir, e.key, "bytes")); err == nil {
			e.size, _ = strconv.ParseInt(string(b), 10, 64)
		}
		total += e.size
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].used.Before(entries[j].used) })
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range entries {
		if total <= c.max && !e.used.IsZero() {
			break
		}
		if c.inUse[e.key] > 0 {
			continue
		}
		if err := os.RemoveAll(filepath.Join(c.dir, e.key)); err != nil {
			return fmt.Errorf("evicting %s: %w", e.key, err)
		}
		total -= e.size
	}
	return nil
}

// treeBytes is the size of the regular files under dir.
func treeBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
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
