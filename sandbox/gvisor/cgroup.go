package gvisor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroupsPath is the OCI linux.cgroupsPath of run id.
func cgroupsPath(id string) string { return "/" + CgroupParent + "/" + id }

// cgroupDirs are the directories run id has or had: one per v1 controller,
// or the one unified v2 directory.
func (r *Runtime) cgroupDirs(id string) []string {
	dirs, _ := filepath.Glob(filepath.Join(r.cgroups, "*", CgroupParent, id))
	if v2 := filepath.Join(r.cgroups, CgroupParent, id); isDir(v2) {
		dirs = append(dirs, v2)
	}
	return dirs
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// oomKills is how many processes the host OOM killer killed in run id's
// memory cgroup (cgroup v1 memory.oom_control, or v2 memory.events).
func (r *Runtime) oomKills(id string) int {
	for _, f := range []string{
		filepath.Join(r.cgroups, "memory", CgroupParent, id, "memory.oom_control"),
		filepath.Join(r.cgroups, CgroupParent, id, "memory.events"),
	} {
		if n, ok := readCounter(f, "oom_kill"); ok {
			return n
		}
	}
	return 0
}

// readCounter reads the "name N" line of a flat-keyed cgroup file.
func readCounter(file, name string) (int, bool) {
	f, err := os.Open(file)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == name {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil
		}
	}
	return 0, false
}

// SweepGrace is how old a cgroup must be before Sweep takes it for a
// leftover. runsc creates a run's cgroups before it moves the sandbox into
// them, so another runtime's run (another state directory, another
// process: Sweep cannot see its containers) has an empty cgroup for a
// moment at its start, and removing it then fails that run. No start takes
// anywhere near this long; a leftover waits for the next sweep.
const SweepGrace = 2 * time.Minute

// Sweep removes what killed runs left behind: every container in the state
// directory (it belongs to this Runtime), and the cgroups of our runs and
// the runsc-* cgroups `runsc do` leaves when it is killed, but only those
// older than the sweep grace (Config.SweepGrace) whose container is not
// live in the state directory. A cgroup that still holds processes cannot
// be removed (EBUSY), so a live sandbox of another runtime is never
// touched, and the grace spares one that is still starting.
func (r *Runtime) Sweep(ctx context.Context) error {
	if err := r.sweep(ctx); err != nil {
		return err
	}
	// destroy only logs what failed: say so when a container outlived it.
	out, err := r.control("list", "-quiet")
	if err != nil {
		return fmt.Errorf("listing sandboxes after the sweep: %w", err)
	}
	if left := strings.Fields(string(out)); len(left) > 0 {
		return fmt.Errorf("sandboxes outlived the sweep: %v", left)
	}
	return nil
}

func (r *Runtime) sweep(ctx context.Context) error {
	out, err := r.control("list", "-quiet")
	if err != nil {
		return fmt.Errorf("listing stale sandboxes: %w", err)
	}
	for _, id := range strings.Fields(string(out)) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.log.Info("sweeping stale sandbox", "id", id)
		r.destroy(id)
		r.metrics.swept.Inc()
	}
	for _, dir := range r.staleCgroups(time.Now()) {
		if err := os.Remove(dir); err == nil {
			r.log.Info("swept stale cgroup", "dir", dir)
			r.metrics.swept.Inc()
		} else if !errors.Is(err, os.ErrNotExist) {
			r.log.Debug("stale cgroup kept", "dir", dir, "err", err)
		}
	}
	return nil
}

// staleCgroups are the cgroup directories Sweep may remove at now: ours or
// runsc do's, made more than the grace before now, of no container live in
// the state directory.
func (r *Runtime) staleCgroups(now time.Time) []string {
	var dirs []string
	for _, pattern := range []string{
		filepath.Join(r.cgroups, "*", CgroupParent, IDPrefix+"*"),
		filepath.Join(r.cgroups, CgroupParent, IDPrefix+"*"),
		filepath.Join(r.cgroups, "*", "runsc-*"),
		filepath.Join(r.cgroups, "runsc-*"),
	} {
		m, _ := filepath.Glob(pattern)
		for _, d := range m {
			fi, err := os.Stat(d)
			if err != nil || !fi.IsDir() || now.Sub(fi.ModTime()) < r.grace || r.live(filepath.Base(d)) {
				continue
			}
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// live reports whether container id has runsc state in this Runtime's
// state directory: its run may still be in progress.
func (r *Runtime) live(id string) bool {
	state, _ := filepath.Glob(filepath.Join(r.state, id+"_sandbox:*"))
	return len(state) > 0
}
