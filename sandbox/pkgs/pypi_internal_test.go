package pkgs

import (
	"encoding/json"
	"os"
	"testing"
)

func readPyPI(t *testing.T, file string) pypiDoc {
	t.Helper()
	b, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var d pypiDoc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestPickWheelFromJSONAPI(t *testing.T) {
	d := readPyPI(t, "pypi-wheels.json")
	w, err := pickWheel(Spec{Kind: PyPI, Name: NormalisePyPI(d.Info.Name), Version: d.Info.Version}, d.URLs)
	if err != nil || w.Filename != "demo_mcp_server-1.4.0-py3-none-any.whl" {
		t.Fatalf("pickWheel = %v, %v; want the pure wheel", w, err)
	}
	f := pypiFacts(d.Info.RequiresDist, Unknown)
	want := map[string]string{
		"mcp":           "mcp>=1.2.0",
		"httpx":         `httpx>=0.27; python_version >= "3.10" | httpx[http2]; extra == "fast"`,
		"pydantic-core": "Pydantic_Core<3",
		"pytest":        `pytest; extra == "test"`,
	}
	if len(f.Dependencies) != len(want) {
		t.Errorf("dependencies %v, want %v", f.Dependencies, want)
	}
	for k, v := range want {
		if f.Dependencies[k] != v {
			t.Errorf("dependency %s = %q, want %q", k, f.Dependencies[k], v)
		}
	}
	if f.Publisher != Unknown || len(f.Signals) != 0 {
		t.Errorf("publisher %q signals %v", f.Publisher, f.Signals)
	}

	s := readPyPI(t, "pypi-sdist-only.json")
	if _, err := pickWheel(Spec{Kind: PyPI, Name: "sdist-only-mcp"}, s.URLs); StatusOf(err) != "no-wheel" {
		t.Errorf("sdist only: %v, want no-wheel", err)
	}
}
