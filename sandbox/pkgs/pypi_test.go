package pkgs_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/histor-observer/histor/sandbox/pkgs"
	"github.com/histor-observer/histor/sandbox/pkgs/pkgstest"
)

func needPip(t *testing.T) {
	t.Helper()
	if err := exec.Command("python3", "-m", "pip", "--version").Run(); err != nil {
		t.Skipf("python3 -m pip is not usable (%v): the install stage runs the host's pip", err)
	}
}

func demoIndex(t *testing.T) (*pkgstest.PyPIIndex, *pkgs.Packages) {
	x := pkgstest.NewPyPIIndex(t)
	x.AddWheel(pkgstest.Wheel{Name: "helper_lib", Version: "2.0.0", RequiresPython: ">=3.9",
		Files: map[string]string{"helper_lib/__init__.py": "VALUE = 2\n"}})
	wheel := x.AddWheel(pkgstest.Wheel{Name: "Demo_MCP.Server", Version: "1.4.0", RequiresPython: ">=3.10",
		Requires: []string{"helper-lib>=2", `pytest; extra == "test"`},
		Files:    map[string]string{"demo_mcp/__init__.py": "", "demo_mcp/cli.py": "def main():\n    return 0\n"},
		EntryPoints: "[console_scripts]\ndemo-tool = demo_mcp.cli:other\ndemo-mcp-server = demo_mcp.cli:main\n\n" +
			"[demo.plugins]\ndemo-mcp-server = demo_mcp.cli:ignored\n"})
	x.SetProvenance(wheel, 200)
	x.AddSdist("sdist-only-mcp", "0.3.1")
	x.AddWheel(pkgstest.Wheel{Name: "tampered-mcp", Version: "1.0.0", Files: map[string]string{"tampered_mcp/__init__.py": ""}})
	x.Tamper("tampered_mcp-1.0.0-py3-none-any.whl", []byte("not the wheel that was published"))
	x.AddWheel(pkgstest.Wheel{Name: "lib-only", Version: "1.0.0", Files: map[string]string{"lib_only/__init__.py": ""}})
	return x, newPackages(t, pkgs.Config{PyPI: x.URL, PyPIIndex: x.IndexURL()})
}

func TestPyPIInstallFixture(t *testing.T) {
	needPip(t)
	x, p := demoIndex(t)
	r, err := resolve(t, p, "pypi:demo-mcp-server")
	if err != nil {
		t.Fatal(err)
	}
	if r.Artifact != "pypi:demo-mcp-server==1.4.0" || r.Filename != "Demo_MCP_Server-1.4.0-py3-none-any.whl" || !strings.HasPrefix(r.Integrity, "sha256:") {
		t.Errorf("resolved %q %q %q", r.Artifact, r.Filename, r.Integrity)
	}
	if r.Facts.Provenance != "present" || r.Facts.Publisher != "unknown" || r.Facts.Dependencies["helper-lib"] != "helper-lib>=2" {
		t.Errorf("facts %+v", r.Facts)
	}
	in, err := p.Install(context.Background(), r, t.TempDir())
	if err != nil {
		t.Fatalf("install: %v (%+v)", err, in.Record)
	}
	want := []string{"python3", "-c", "import sys; from demo_mcp.cli import main; sys.exit(main())"}
	if !slices.Equal(in.Command, want) || !slices.Contains(in.Env, "PYTHONPATH=/work/pkg") {
		t.Errorf("command %q env %q, want %q", in.Command, in.Env, want)
	}
	for _, f := range []string{"demo_mcp/cli.py", "helper_lib/__init__.py"} {
		if _, err := os.Stat(filepath.Join(in.Dir, f)); err != nil {
			t.Errorf("%s not installed: %v", f, err)
		}
	}
	// The entry point runs as the sandbox will start it.
	cmd := exec.Command(in.Command[0], in.Command[1:]...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+in.Dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("entry point: %v %s", err, out)
	}
	_ = x
}

func TestPyPIRefusals(t *testing.T) {
	needPip(t)
	_, p := demoIndex(t)
	tests := []struct{ spec, status, detail string }{
		{"pypi:sdist-only-mcp", "no-wheel", "only an sdist: building it would run the package's code"},
		{"pypi:absent-project", "not-found", "not in the registry"},
		{"pypi:demo-mcp-server==9.9", "not-found", "not in the registry"},
		{"pypi:tampered-mcp", "install-failed", "does not match the sha256 digest"},
		{"pypi:lib-only", "no-entry-point", "no command to start"},
	}
	for _, tt := range tests {
		r, err := resolve(t, p, tt.spec)
		if err == nil {
			if r.Facts.Provenance != "absent" {
				t.Errorf("%s: provenance %q, want absent (integrity API 404)", tt.spec, r.Facts.Provenance)
			}
			_, err = p.Install(context.Background(), r, t.TempDir())
		}
		if got := string(pkgs.StatusOf(err)); got != tt.status || !strings.Contains(pkgs.DetailOf(err), tt.detail) {
			t.Errorf("%s: %s %q, want %s %q", tt.spec, got, pkgs.DetailOf(err), tt.status, tt.detail)
		}
	}
}

// TestLocalWheel installs a wheel given as a file; its dependency comes
// from the index.
func TestLocalWheel(t *testing.T) {
	needPip(t)
	x, p := demoIndex(t)
	w := pkgstest.Wheel{Name: "local-mcp", Version: "0.1.0", Requires: []string{"helper-lib"},
		Files:       map[string]string{"local_mcp/__init__.py": "def run():\n    return 0\n"},
		EntryPoints: "[console_scripts]\nlocal-mcp = local_mcp:run\n"}
	file := filepath.Join(t.TempDir(), w.Filename())
	if err := os.WriteFile(file, w.Build(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := resolve(t, p, file)
	if err != nil {
		t.Fatal(err)
	}
	if r.Spec.Registry() != "local" || r.Artifact != "pypi:local-mcp==0.1.0" || r.Facts.Provenance != "unknown" {
		t.Errorf("resolved %+v", r)
	}
	in, err := p.Install(context.Background(), r, t.TempDir())
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	if _, err := os.Stat(filepath.Join(in.Dir, "helper_lib", "__init__.py")); err != nil || in.Command[2] != "import sys; from local_mcp import run; sys.exit(run())" {
		t.Errorf("command %q, dependency %v", in.Command, err)
	}
	_ = x
}
