package observer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/histor-observer/histor/sandbox/pkgs"
)

// installCache keeps finished host installs keyed by the artifact's
// integrity, which the registry published and Install checked: the same
// key is the same bytes, so reusing the tree is reusing the install.
//
//	<key>/pkg            the installed tree, never written after it is in place
//	<key>/installed.json Command, Env and Record of the install
type installCache struct{ dir string }

func openInstallCache(dir string) (*installCache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating install cache: %w", err)
	}
	return &installCache{dir: dir}, nil
}

func (c *installCache) key(r *pkgs.Resolved) string {
	sum := sha256.Sum256([]byte(string(r.Spec.Kind) + "\n" + r.Artifact + "\n" + r.Integrity))
	return hex.EncodeToString(sum[:16])
}

// load returns the cached install of r, or nil.
func (c *installCache) load(r *pkgs.Resolved) *pkgs.Installed {
	dir := filepath.Join(c.dir, c.key(r))
	data, err := os.ReadFile(filepath.Join(dir, "installed.json"))
	if err != nil {
		return nil
	}
	var in pkgs.Installed
	if json.Unmarshal(data, &in) != nil {
		return nil
	}
	in.Dir = filepath.Join(dir, "pkg")
	return &in
}

// store moves a finished install (work/pkg) into the cache and returns it
// as cached. A concurrent store of the same key wins or loses as a whole.
func (c *installCache) store(r *pkgs.Resolved, in *pkgs.Installed) (*pkgs.Installed, error) {
	tmp, err := os.MkdirTemp(c.dir, ".tmp-")
	if err != nil {
		return nil, fmt.Errorf("caching install: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Rename(in.Dir, filepath.Join(tmp, "pkg")); err != nil {
		return nil, fmt.Errorf("caching install: %w", err)
	}
	data, err := json.Marshal(in)
	if err == nil {
		err = os.WriteFile(filepath.Join(tmp, "installed.json"), data, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("caching install: %w", err)
	}
	final := filepath.Join(c.dir, c.key(r))
	if err := os.Rename(tmp, final); err != nil && !os.IsExist(err) {
		if cached := c.load(r); cached != nil { // another run stored it first
			return cached, nil
		}
		return nil, fmt.Errorf("caching install: %w", err)
	}
	out := *in
	out.Dir = filepath.Join(final, "pkg")
	return &out, nil
}

// install is the install stage, through the cache when there is one.
func (o *Observer) install(ctx context.Context, r *pkgs.Resolved, work string) (*pkgs.Installed, error) {
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, fmt.Errorf("creating install dir: %w", err)
	}
	if o.cache != nil && r.Integrity != "" {
		began := time.Now()
		if in := o.cache.load(r); in != nil {
			in.Record.Seconds = since(began)
			in.Record.Detail = "installed before; reused by integrity"
			return in, nil
		}
	}
	in, err := o.packages.Install(ctx, r, work)
	if err != nil || o.cache == nil || r.Integrity == "" {
		return in, err
	}
	cached, cerr := o.cache.store(r, in)
	if cerr != nil {
		o.log.Warn("install cache", "err", cerr)
		return in, nil
	}
	return cached, nil
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
