package rootfs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Cache holds one root per kind under Dir:
//
//	<kind>/           the root
//	<kind>.json       its Root record, written last: a root without one is unfinished
//	<kind>.manifest   its manifest, one Entry per line
//
// It is safe for concurrent use, and a lock file keeps two processes from
// building into one Dir at once.
type Cache struct {
	// Dir holds the roots (observer.Host's RootfsDir; by default the user cache directory's
	// histor/rootfs).
	Dir string
	// Suite, Mirror, Mmdebstrap and Timeout are passed to Build (Spec's defaults apply).
	Suite, Mirror, Mmdebstrap string
	Timeout                   time.Duration
	// Verify makes Ensure recompute a cached root's digest (about 5 s for
	// the 580 MB node root) instead of trusting its record.
	Verify bool
	// Logger receives a line per build; nil discards them.
	Logger *slog.Logger

	mu sync.Mutex // held through a whole Ensure
}

// ErrDigestMismatch is returned (wrapped) by Check when a root's tree no
// longer has the digest its record names.
var ErrDigestMismatch = errors.New("root digest does not match its record")

// Ensure returns the cached root of kind k, building it first if there is
// none, if it was built from another suite or package list, or (with
// Verify) if its tree no longer has its recorded digest. A build goes into a
// temporary directory and is renamed into place, so a crash mid-build leaves
// the previous root, or none, never a partial one.
func (c *Cache) Ensure(ctx context.Context, k Kind) (*Root, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	spec, err := c.spec(k)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating root cache: %w", err)
	}
	unlock, err := lockDir(c.Dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if r, err := c.cached(spec); err == nil {
		return r, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		c.logger().Info("rebuilding root", "kind", k, "reason", err.Error())
	}
	return c.build(ctx, spec)
}

// Load returns the cached root of kind k as its record says, without
// building or verifying anything.
func (c *Cache) Load(k Kind) (*Root, error) {
	b, err := os.ReadFile(c.recordPath(k))
	if err != nil {
		return nil, fmt.Errorf("reading root record: %w", err)
	}
	var r Root
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("reading root record %s: %w", c.recordPath(k), err)
	}
	r.Dir = c.rootPath(k)
	return &r, nil
}

// Check recomputes the digest of the cached root of kind k and compares it
// with its record.
func (c *Cache) Check(k Kind) (*Root, error) {
	r, err := c.Load(k)
	if err != nil {
		return nil, err
	}
	d, _, err := Digest(r.Dir)
	if err != nil {
		return nil, err
	}
	if d != r.Digest {
		return nil, fmt.Errorf("%w: %s has %s, record says %s", ErrDigestMismatch, r.Dir, d, r.Digest)
	}
	return r, nil
}

func (c *Cache) spec(k Kind) (Spec, error) {
	return Spec{Kind: k, Suite: c.Suite, Mirror: c.Mirror, Mmdebstrap: c.Mmdebstrap, Timeout: c.Timeout}.withDefaults()
}

// cached returns the recorded root if it still answers spec.
func (c *Cache) cached(spec Spec) (*Root, error) {
	r, err := c.Load(spec.Kind)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(r.Dir); err != nil {
		return nil, err
	}
	if r.Suite != spec.Suite || !slices.Equal(r.Packages, spec.Packages) {
		return nil, fmt.Errorf("cached root was built from %s %v, want %s %v", r.Suite, r.Packages, spec.Suite, spec.Packages)
	}
	if c.Verify {
		return c.Check(spec.Kind)
	}
	return r, nil
}

// build makes a fresh root in a temporary directory and moves it into place.
func (c *Cache) build(ctx context.Context, spec Spec) (*Root, error) {
	tmp, err := c.tempDir(spec.Kind)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	spec.Dir = filepath.Join(tmp, "root")
	c.logger().Info("building root", "kind", spec.Kind, "suite", spec.Suite, "packages", spec.Packages)
	r, m, err := Build(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("building %s root: %w", spec.Kind, err)
	}
	if err := c.install(r, m, tmp); err != nil {
		return nil, err
	}
	c.logger().Info("built root", "kind", r.Kind, "digest", r.Digest, "node", r.Node, "python", r.Python,
		"files", r.Files, "bytes", r.Bytes, "seconds", r.BuildSeconds)
	return r, nil
}

// install moves a built root into place: the old record goes first (so a
// crash leaves no record naming a root that is half gone), then the trees
// are swapped, then the manifest and the new record are written.
func (c *Cache) install(r *Root, m Manifest, tmp string) error {
	final := c.rootPath(r.Kind)
	if err := os.Remove(c.recordPath(r.Kind)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing old root record: %w", err)
	}
	if err := os.Rename(final, filepath.Join(tmp, "old")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("moving old root aside: %w", err)
	}
	if err := os.Rename(r.Dir, final); err != nil {
		return fmt.Errorf("moving new root into place: %w", err)
	}
	r.Dir = final
	if err := writeAtomic(c.manifestPath(r.Kind), func(f *os.File) error { _, err := m.WriteTo(f); return err }); err != nil {
		return fmt.Errorf("writing root manifest: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding root record: %w", err)
	}
	if err := writeAtomic(c.recordPath(r.Kind), func(f *os.File) error { _, err := f.Write(append(b, '\n')); return err }); err != nil {
		return fmt.Errorf("writing root record: %w", err)
	}
	return nil
}

func (c *Cache) tempDir(k Kind) (string, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	dir := filepath.Join(c.Dir, ".build-"+string(k)+"-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating build directory: %w", err)
	}
	return dir, nil
}

func (c *Cache) rootPath(k Kind) string     { return filepath.Join(c.Dir, string(k)) }
func (c *Cache) recordPath(k Kind) string   { return filepath.Join(c.Dir, string(k)+".json") }
func (c *Cache) manifestPath(k Kind) string { return filepath.Join(c.Dir, string(k)+".manifest") }

func (c *Cache) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// writeAtomic writes path through a synced temporary file and a rename.
func writeAtomic(path string, write func(*os.File) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	// Records are read by whoever runs the sandbox, not only by the builder.
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// lockDir takes an exclusive flock on dir/.lock, waiting for another
// process's build to finish.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking root cache: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking root cache: %w", err)
	}
	return func() { f.Close() }, nil
}
