package pkgs

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/histor-observer/histor/sandbox"
)

// pipInstall installs the verified wheel and its dependencies (wheels
// only, from the configured index, for the root image's Python) into dir.
// --only-binary=:all: is what makes this safe (a wheel is unpacked, never
// built) and what pip requires before it will pick wheels for another
// Python than its own; --isolated keeps the operator's pip configuration
// and environment out.
func (p *Packages) pipInstall(ctx context.Context, wheel, work, dir string) error {
	env := hostEnv(filepath.Join(work, "home"), "PIP_CONFIG_FILE="+os.DevNull, "PYTHONNOUSERSITE=1", "PYTHONDONTWRITEBYTECODE=1")
	argv := append(slices.Clone(p.cfg.PipCommand), "install", "--isolated", "--disable-pip-version-check",
		"--no-cache-dir", "--no-input", "--only-binary=:all:", "--no-compile", "--target", dir,
		"--index-url", p.cfg.PyPIIndex, "--python-version", p.cfg.PythonVersion)
	if ca := os.Getenv("SSL_CERT_FILE"); ca != "" {
		argv = append(argv, "--cert", ca) // --isolated would ignore it in the environment
	}
	argv = append(argv, wheel)
	return p.run(ctx, argv, env, work)
}

// pyIdent is a dotted Python name: what an entry point may import and call.
var pyIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// PyPIEntry is the command that starts project name installed under dir
// (pip --target): the console_scripts entry of its dist-info named like the
// project, else one containing "mcp", else the first, run by importing it
// (the generated script wrappers name the host's interpreter).
func PyPIEntry(dir, name string) ([]string, error) {
	infos, _ := filepath.Glob(filepath.Join(dir, "*.dist-info"))
	var scripts [][2]string
	for _, info := range infos {
		dist, _, _ := strings.Cut(strings.TrimSuffix(filepath.Base(info), ".dist-info"), "-")
		if NormalisePyPI(dist) == name {
			scripts = consoleScripts(filepath.Join(info, "entry_points.txt"))
			break
		}
	}
	target := pickScript(scripts, name)
	if target == "" {
		return nil, fail(sandbox.StatusNoEntryPoint, nil, "the package declares no command to start")
	}
	ref, _, _ := strings.Cut(target, "[") // extras are not part of the object
	module, attr, _ := strings.Cut(strings.TrimSpace(ref), ":")
	module, attr = strings.TrimSpace(module), strings.TrimSpace(attr)
	if !pyIdent.MatchString(module) || !pyIdent.MatchString(attr) {
		return nil, fail(sandbox.StatusNoEntryPoint, nil, "refused entry point %q: not module:function", clip(target, 100))
	}
	first, _, _ := strings.Cut(attr, ".")
	return []string{"python3", "-c", "import sys; from " + module + " import " + first + "; sys.exit(" + attr + "())"}, nil
}

// consoleScripts reads the [console_scripts] section of an
// entry_points.txt, in file order.
func consoleScripts(file string) [][2]string {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out [][2]string
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(out) < 1000 {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "["):
			section = strings.TrimSpace(strings.Trim(line, "[]"))
		case section == "console_scripts":
			if k, v, ok := strings.Cut(line, "="); ok {
				out = append(out, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
			}
		}
	}
	return out
}

func pickScript(scripts [][2]string, name string) string {
	if len(scripts) == 0 {
		return ""
	}
	for _, want := range []func(k string) bool{
		func(k string) bool { return NormalisePyPI(k) == name },
		func(k string) bool { return strings.Contains(strings.ToLower(k), "mcp") },
	} {
		for _, s := range scripts {
			if want(s[0]) {
				return s[1]
			}
		}
	}
	return scripts[0][1]
}
