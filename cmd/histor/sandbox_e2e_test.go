package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSandboxJSON runs `histor sandbox SPEC --json` on server-memory as a
// subprocess and checks the observation's shape; a malformed SPEC exits 2.
func TestSandboxJSON(t *testing.T) {
	if r := histor(t, "", "sandbox", "npm:not a name"); r.code != 2 {
		t.Errorf("malformed spec: exit %d, stderr %q", r.code, r.stderr)
	}
	if testing.Short() {
		t.Skip("installs from the npm registry and runs gVisor; skipped under -short")
	}
	roots := os.Getenv("HISTOR_ROOTFS_CACHE")
	if os.Geteuid() != 0 || roots == "" {
		t.Skip("needs root and HISTOR_ROOTFS_CACHE (the built Debian roots)")
	}
	if _, err := os.Stat(filepath.Join(roots, "node.json")); err != nil {
		t.Skipf("no node root built: %v", err)
	}
	if _, err := exec.LookPath("runsc"); err != nil {
		t.Skip("runsc is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "sandbox", "npm:@modelcontextprotocol/server-memory@2026.8.31", "--json",
		"--rootfs", roots, "--skip-root-check", "--sandbox-dir", t.TempDir())
	cmd.Env = cleanEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("histor sandbox: %v\n%s", err, errb.String())
	}
	var obs map[string]any
	if err := json.Unmarshal(out.Bytes(), &obs); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	for _, k := range []string{"type", "observer", "registry", "name", "version", "package", "integrity", "observedAt",
		"status", "seconds", "runtime", "limits", "tools", "toolSetDigest", "calls", "install", "behaviour", "versionFacts", "stages"} {
		if _, ok := obs[k]; !ok {
			t.Errorf("no %q member", k)
		}
	}
	if obs["type"] != "histor.package-observation/v1" || obs["status"] != "ok" || obs["package"] != "npm:@modelcontextprotocol/server-memory@2026.8.31" {
		t.Errorf("type %v status %v package %v (detail %v)", obs["type"], obs["status"], obs["package"], obs["detail"])
	}
	rt, _ := obs["runtime"].(map[string]any)
	if rt["name"] != "runsc" || rt["network"] != "traps" || rt["root"] != "node" {
		t.Errorf("runtime %v", rt)
	}
	beh, _ := obs["behaviour"].(map[string]any)
	for _, phase := range []string{"startup", "calls"} {
		p, _ := beh[phase].(map[string]any)
		for _, k := range []string{"exec", "lookups", "network", "decoys", "placeholders", "writes"} {
			if _, ok := p[k].([]any); !ok {
				t.Errorf("behaviour.%s.%s is %v, want a list", phase, k, p[k])
			}
		}
	}
}
