package pkgs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/histor-observer/histor/sandbox"
)

// maxScriptPackages bounds the names LifecyclePackages returns, as HISTOR's.
const maxScriptPackages = 50

// npmInstall installs the verified tarball into dir. npm reads no
// configuration of the operator's: its user and global config files are
// empty files, its cache and HOME are inside work.
func (p *Packages) npmInstall(ctx context.Context, tarball, work, dir string) error {
	home := filepath.Join(work, "home")
	user, global := filepath.Join(home, "npmrc"), filepath.Join(home, "npmrc-global")
	for _, f := range []string{user, global} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			return fmt.Errorf("preparing the install: %w", err)
		}
	}
	env := hostEnv(home,
		"npm_config_userconfig="+user, "npm_config_globalconfig="+global,
		"npm_config_cache="+filepath.Join(home, "npm-cache"), "npm_config_registry="+p.cfg.NPMRegistry+"/",
		"npm_config_update_notifier=false", "npm_config_progress=false")
	argv := append(slices.Clone(p.cfg.NPMCommand), "install", "--ignore-scripts", "--omit=dev",
		"--no-audit", "--no-fund", "--prefix", dir, tarball)
	return p.run(ctx, argv, env, work)
}

// LifecyclePackages names the packages under dir/node_modules (paths
// relative to it, sorted, at most 50) that would run code on install: a
// preinstall, install or postinstall script, or a binding.gyp with neither
// install script, for which npm runs node-gyp rebuild by itself.
func LifecyclePackages(dir string) ([]string, error) {
	root := filepath.Join(dir, "node_modules")
	found := []string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable corner is no reason to miss the rest
		}
		if d.Name() != "package.json" || d.IsDir() || !isPackageDir(filepath.Dir(p)) {
			return nil
		}
		if runsOnInstall(filepath.Dir(p)) {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scanning install scripts: %w", err)
	}
	slices.Sort(found)
	found = slices.Compact(found)
	return found[:min(len(found), maxScriptPackages)], nil
}

// isPackageDir says dir is node_modules/<name> or node_modules/@scope/<name>,
// not some package.json deeper inside a package.
func isPackageDir(dir string) bool {
	parent := filepath.Dir(dir)
	if filepath.Base(parent) == "node_modules" {
		return !strings.HasPrefix(filepath.Base(dir), "@") && !strings.HasPrefix(filepath.Base(dir), ".")
	}
	return strings.HasPrefix(filepath.Base(parent), "@") && filepath.Base(filepath.Dir(parent)) == "node_modules"
}

func runsOnInstall(pkgDir string) bool {
	var m struct {
		Scripts map[string]json.RawMessage `json:"scripts"`
	}
	if readJSON(filepath.Join(pkgDir, "package.json"), 1<<20, &m) != nil {
		return false
	}
	for _, s := range installScriptNames {
		if present(m.Scripts[s]) {
			return true
		}
	}
	_, err := os.Stat(filepath.Join(pkgDir, "binding.gyp"))
	return err == nil
}

// NPMEntry is the command that starts package name installed under dir:
// its bin named like the package, else one whose name contains "mcp", else
// the first. A bin outside the package is refused (no-entry-point).
func NPMEntry(dir, name string) ([]string, error) {
	pkgDir := filepath.Join(dir, "node_modules", filepath.FromSlash(name))
	var m struct {
		Bin json.RawMessage `json:"bin"`
	}
	if err := readJSON(filepath.Join(pkgDir, "package.json"), 1<<20, &m); err != nil {
		return nil, fail(sandbox.StatusNoEntryPoint, err, "the installed package has no readable package.json")
	}
	target := pickBin(m.Bin, name)
	if target == "" {
		return nil, fail(sandbox.StatusNoEntryPoint, nil, "the package declares no command to start")
	}
	rel := path.Clean(filepath.ToSlash(target))
	if path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, fail(sandbox.StatusNoEntryPoint, nil, "refused bin %q: it points outside its package", clip(target, 100))
	}
	if err := inside(pkgDir, filepath.Join(pkgDir, filepath.FromSlash(rel))); err != nil {
		return nil, fail(sandbox.StatusNoEntryPoint, err, "refused bin %q", clip(target, 100))
	}
	return []string{"node", path.Join(MountPoint, "node_modules", name, rel)}, nil
}

// inside says file exists, is a regular file and, symlinks resolved,
// stays under dir.
func inside(dir, file string) error {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(file)
	if err != nil {
		return fmt.Errorf("not in the package: %w", err)
	}
	if rel, err := filepath.Rel(realDir, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("it resolves outside its package")
	}
	if st, err := os.Stat(real); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("not a regular file")
	}
	return nil
}

// pickBin reads bin (a string, or an object in publish order) and picks
// the command to start.
func pickBin(raw json.RawMessage, name string) string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one
	}
	bins := orderedStrings(raw)
	if len(bins) == 0 {
		return ""
	}
	short := name[strings.LastIndex(name, "/")+1:]
	for _, want := range []func(k string) bool{
		func(k string) bool { return k == short },
		func(k string) bool { return k == name },
		func(k string) bool { return strings.Contains(strings.ToLower(k), "mcp") },
	} {
		for _, b := range bins {
			if want(b[0]) {
				return b[1]
			}
		}
	}
	return bins[0][1]
}

// orderedStrings is a JSON object's string members in document order:
// "the first bin" is the first one published, which a Go map forgets.
func orderedStrings(raw json.RawMessage) [][2]string {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out [][2]string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return out
		}
		var v any
		if dec.Decode(&v) != nil {
			return out
		}
		if s, ok := v.(string); ok && s != "" {
			out = append(out, [2]string{k.(string), s})
		}
	}
	return out
}

func readJSON(file string, limit int64, v any) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return err
	}
	if int64(len(b)) > limit {
		return fmt.Errorf("%s is larger than %d bytes", file, limit)
	}
	return json.Unmarshal(b, v)
}
