package observer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/histor-observer/histor/sandbox/gvisor"
	"github.com/histor-observer/histor/sandbox/trap"
)

// An Observer works in a directory of its own under Config.WorkDir,
// i-<random>, holding an exclusive flock on its lock file for its life.
// Processes that share a WorkDir (two `histor sandbox` runs at once, a
// worker restarted beside the one still stopping) so never sweep each
// other's live sandboxes from a shared runsc state directory, nor rewrite
// each other's trap CA under a running sandbox: both were seen when
// runsc's state was WorkDir's own. New sweeps the sibling directories
// whose lock nobody holds (their process is gone): their runsc containers,
// their runs' tmpfs mounts, then the directories themselves.
//
//	WorkDir/i-<random>/.lock      flocked by the live Observer
//	WorkDir/i-<random>/runsc      runsc's --root
//	WorkDir/i-<random>/runs/...   one directory per observation
//	WorkDir/i-<random>/trap-ca.pem
const (
	instancePrefix = "i-"
	newPrefix      = ".new-" // being made: not yet locked, never swept young
	lockName       = ".lock"
	// newGrace spares a directory another process is still making.
	newGrace = time.Minute
)

// instance is an Observer's own work directory, locked.
type instance struct {
	dir  string
	lock *os.File
}

// claimInstance sweeps parent's abandoned instance directories and makes a
// new one, locked. It is made under a name sweepers pass over, locked,
// and only then renamed into place, so no sweeper ever sees it unlocked.
func claimInstance(ctx context.Context, parent string, sweep func(context.Context, string) error, log *slog.Logger) (*instance, error) {
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, fmt.Errorf("creating work dir: %w", err)
	}
	sweepInstances(ctx, parent, sweep, log)
	tmp, err := os.MkdirTemp(parent, newPrefix)
	if err != nil {
		return nil, fmt.Errorf("creating the observer's work dir: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(tmp, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		err = unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("locking the observer's work dir: %w", err)
	}
	dir := filepath.Join(parent, instancePrefix+strings.TrimPrefix(filepath.Base(tmp), newPrefix))
	if err := os.Rename(tmp, dir); err != nil {
		lock.Close()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("placing the observer's work dir: %w", err)
	}
	return &instance{dir: dir, lock: lock}, nil
}

// release removes the directory and drops the lock.
func (i *instance) release() error {
	err := removeMounted(i.dir)
	i.lock.Close()
	return err
}

// sweepInstances removes every instance directory of parent whose lock is
// free, and every half-made one older than newGrace. Failures are logged:
// a directory left now is swept by the next Observer.
func sweepInstances(ctx context.Context, parent string, sweep func(context.Context, string) error, log *slog.Logger) {
	des, _ := os.ReadDir(parent)
	for _, de := range des {
		name := de.Name()
		dir := filepath.Join(parent, name)
		switch {
		case !de.IsDir():
			continue
		case strings.HasPrefix(name, newPrefix):
			if fi, err := de.Info(); err != nil || time.Since(fi.ModTime()) < newGrace {
				continue
			}
		case strings.HasPrefix(name, instancePrefix):
			lock, held := tryLock(dir)
			if held {
				continue // a live Observer's
			}
			if lock != nil {
				defer lock.Close()
			}
		default:
			continue
		}
		log.Info("sweeping an abandoned sandbox work dir", "dir", dir)
		if err := sweep(ctx, dir); err != nil {
			log.Warn("sweeping abandoned sandbox work dir", "dir", dir, "err", err)
			continue
		}
		if err := removeMounted(dir); err != nil {
			log.Warn("removing abandoned sandbox work dir", "dir", dir, "err", err)
		}
	}
}

// tryLock takes dir's lock if nobody holds it; held reports that someone
// does. A directory without a lock file is nobody's.
func tryLock(dir string) (lock *os.File, held bool) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR, 0)
	if err != nil {
		return nil, false
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, errors.Is(err, unix.EWOULDBLOCK)
	}
	return f, false
}

// sweepRuntime destroys the runsc containers left in an abandoned
// instance directory's state, then the trap networks of its runs: their
// namespaces outlive the process that opened them.
func sweepRuntime(runsc, platform string, log *slog.Logger) func(context.Context, string) error {
	return func(ctx context.Context, dir string) error {
		if state := filepath.Join(dir, "runsc"); exists(state) {
			// New sweeps its state directory; the runtime is dropped after.
			if _, err := gvisor.New(ctx, gvisor.Config{Runsc: runsc, StateDir: state, Platform: platform, Logger: log}); err != nil {
				return err
			}
		}
		return sweepNetworks(ctx, dir)
	}
}

// sweepNetworks removes the trap networks of the runs under an abandoned
// instance directory: each run's directory is runs/<tag>-<random>.
func sweepNetworks(ctx context.Context, dir string) error {
	des, err := os.ReadDir(filepath.Join(dir, "runs"))
	if err != nil {
		return nil // no run was made
	}
	var errs []error
	for _, de := range des {
		tag, _, ok := strings.Cut(de.Name(), "-")
		if !ok || !de.IsDir() {
			continue
		}
		for _, stage := range stages {
			if err := trap.Remove(ctx, networkID(stage, tag)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// removeMounted unmounts what is mounted under dir (a run's tmpfs left by
// a process that died) and removes dir.
func removeMounted(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmounting %s: %w", m, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	return nil
}

// mountsUnder lists the mount points below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // mountinfo names mount points by their resolved paths
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if p := unescapeMount(fields[4]); strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
