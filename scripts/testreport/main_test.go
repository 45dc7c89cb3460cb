package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReport runs `go test -json` over a small module of its own, with tests that pass,
// fail and skip (one a subtest), and reads its stream as scripts/test does.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.test/m\n\ngo 1.22\n",
		"m_test.go": `package m

import "testing"

func TestPasses(t *testing.T) { t.Log("quiet when it passes") }
func TestFails(t *testing.T)  { t.Error("the reason it failed") }
func TestNeedsRoot(t *testing.T) { t.Skip("needs root") }
func TestAlsoRoot(t *testing.T) { t.Skip("needs root") }
func TestParent(t *testing.T) {
	t.Run("child", func(t *testing.T) { t.Skipf("runsc is %s", "missing") })
}
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-json", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	stream, _ := cmd.Output() // exits 1: one test fails
	var out, summary bytes.Buffer
	r := &report{out: &out, running: map[string][]string{}}
	if err := r.read(bytes.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	r.finish(&summary)
	if !r.failed {
		t.Error("a failing test did not fail the report")
	}
	o, s := out.String(), summary.String()
	for _, want := range []string{"the reason it failed", "--- FAIL: TestFails", "FAIL\texample.test/m"} {
		if !strings.Contains(o, want) {
			t.Errorf("output lacks %q:\n%s", want, o)
		}
	}
	if strings.Contains(o, "quiet when it passes") || strings.Contains(o, "=== RUN") {
		t.Errorf("output shows a passing test's log, as -v would:\n%s", o)
	}
	for _, want := range []string{"3 TESTS SKIPPED", "   2  needs root", "example.test/m.TestAlsoRoot", "   1  runsc is missing", "example.test/m.TestParent/child"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

// TestUnfinished: a stream that ends with a test still running (a timeout's panic) fails
// and shows that test's output.
func TestUnfinished(t *testing.T) {
	stream := `{"Action":"run","Package":"p","Test":"TestHang"}
{"Action":"output","Package":"p","Test":"TestHang","Output":"    hang_test.go:9: waiting\n"}
`
	var out bytes.Buffer
	r := &report{out: &out, running: map[string][]string{}}
	if err := r.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	r.finish(&bytes.Buffer{})
	if !r.failed || !strings.Contains(out.String(), "--- NO RESULT: p TestHang") || !strings.Contains(out.String(), "waiting") {
		t.Errorf("failed %v, output %q", r.failed, out.String())
	}
}
