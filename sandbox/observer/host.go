package observer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Host is where and with what one host observes packages: the settings `histor sandbox`,
// `histor sandbox worker` and a node's own worker share. Config maps them onto a Config in
// one place, with one default layout.
type Host struct {
	// Dir holds the runs' work files (Dir/work) and the install cache (Dir/installs).
	// Default: the user cache directory's histor/sandbox.
	Dir string
	// RootfsDir is the Debian roots' cache. Default: the user cache directory's histor/rootfs,
	// shared by every command and node of the machine (the roots are named by digest).
	RootfsDir string
	// SkipRootCheck trusts the roots' records instead of recomputing their digests.
	SkipRootCheck bool
	// NoInstallCache reinstalls every package (no Dir/installs).
	NoInstallCache bool
	// NPMRegistry, PyPI and PyPIIndex are where packages are resolved and installed from
	// (defaults: the public registries).
	NPMRegistry, PyPI, PyPIIndex string
	// WorkBytes and InstallCacheBytes are Config's (0: its defaults).
	WorkBytes, InstallCacheBytes int64
}

// DefaultHostDirs are Host's default Dir and RootfsDir.
func DefaultHostDirs() (dir, roots string, err error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", "", fmt.Errorf("no user cache directory for the sandbox's files and roots: %w", err)
	}
	return filepath.Join(cache, "histor", "sandbox"), filepath.Join(cache, "histor", "rootfs"), nil
}

// WithDefaults fills Dir and RootfsDir where they are empty.
func (h Host) WithDefaults() (Host, error) {
	if h.Dir != "" && h.RootfsDir != "" {
		return h, nil
	}
	dir, roots, err := DefaultHostDirs()
	if err != nil {
		return h, errors.New("set the sandbox directory and the roots' directory: " + err.Error())
	}
	if h.Dir == "" {
		h.Dir = dir
	}
	if h.RootfsDir == "" {
		h.RootfsDir = roots
	}
	return h, nil
}

// Config is the observer's configuration on this host; the caller adds Limits, Concurrency,
// Logger and Registerer.
func (h Host) Config() (Config, error) {
	h, err := h.WithDefaults()
	if err != nil {
		return Config{}, err
	}
	cfg := Config{
		WorkDir: filepath.Join(h.Dir, "work"), RootfsDir: h.RootfsDir, SkipRootCheck: h.SkipRootCheck,
		NPMRegistry: h.NPMRegistry, PyPI: h.PyPI, PyPIIndex: h.PyPIIndex,
		WorkBytes: h.WorkBytes, InstallCacheBytes: h.InstallCacheBytes,
	}
	if !h.NoInstallCache {
		cfg.InstallCache = filepath.Join(h.Dir, "installs")
	}
	return cfg, nil
}
