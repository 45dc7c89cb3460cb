// Package canontest gives tests access to an independent RFC 8785
// implementation, the npm package canonicalize run by Node.js, so that
// canonical bytes and digests can be checked against code we did not write.
package canontest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// CanonicalizeModule returns the directory of the canonicalize@2.1.0 package:
// from $HISTOR_NPM_DIR/node_modules if it is there, else installed with
// npm into a directory private to the test. It skips the test, saying why,
// when node is missing or npm cannot reach its registry.
func CanonicalizeModule(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH, so there is no independent implementation to compare with")
	}
	if dir := os.Getenv("HISTOR_NPM_DIR"); dir != "" {
		mod := filepath.Join(dir, "node_modules", "canonicalize")
		if _, err := os.Stat(mod); err == nil {
			return mod
		}
	}
	prefix := t.TempDir()
	cmd := exec.Command("npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", prefix, "canonicalize@2.1.0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("npm could not install canonicalize@2.1.0 (registry unreachable?): %v\n%s", err, out)
	}
	return filepath.Join(prefix, "node_modules", "canonicalize")
}

// RunNode runs script with node, passing the module directory as its last
// argument and stdin as its standard input, and returns its standard output.
func RunNode(t testing.TB, script, module string, stdin []byte) []byte {
	t.Helper()
	cmd := exec.Command("node", "-e", script, module)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running node: %v\n%s", err, stderr.String())
	}
	return out
}
