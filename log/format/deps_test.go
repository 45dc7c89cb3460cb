package format_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoStoreDependency: the verifiers must run without the log's store, so neither this
// package nor the auditor may depend on Pebble, directly or through anything they import.
func TestNoStoreDependency(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to list dependencies with")
	}
	for _, pkg := range []string{
		"github.com/histor-observer/histor/log/format",
		"github.com/histor-observer/histor/node/audit",
	} {
		out, err := exec.Command(goTool, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 || deps[len(deps)-1] != pkg {
			t.Fatalf("go list -deps %s printed no dependency list:\n%s", pkg, out)
		}
		for _, d := range deps {
			if strings.HasPrefix(d, "github.com/cockroachdb/pebble") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
}
