package command

import (
	"bytes"
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/node"
)

// serveNode starts a real node on loopback with a fresh seed and one
// logged entry (an empty log has no head to audit).
func serveNode(t *testing.T) string {
	t.Helper()
	n, err := node.New(node.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	entry := hlog.Entry{ID: "urn:uuid:00000000-0000-4000-8000-000000000001", Label: []byte(`{"id":"urn:uuid:00000000-0000-4000-8000-000000000001"}`)}
	if _, err := n.Log().Append(context.Background(), []hlog.Entry{entry}, nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(n.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"histor"}, args...), deps{stdio: Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}})
	return code, out.String(), errb.String()
}

func TestAuditExitCodes(t *testing.T) {
	honest, other := serveNode(t), serveNode(t)
	state := filepath.Join(t.TempDir(), "sth.json")
	if code, out, stderr := runCLI("audit", honest, "--state", state, "--tiles"); code != 0 || !strings.Contains(out, `"treeSize": 1`) {
		t.Fatalf("honest log: exit %d: %s%s", code, out, stderr)
	}
	// Another key at the same address is what a log that changed its key looks like.
	if code, _, stderr := runCLI("audit", other, "--state", state); code != 1 || !strings.HasPrefix(stderr, "AUDIT FAILED: ") {
		t.Errorf("changed key: exit %d, stderr %q; want 1 and AUDIT FAILED", code, stderr)
	}
	dead := httptest.NewServer(nil)
	dead.Close()
	if code, _, stderr := runCLI("audit", dead.URL, "--state", state); code != 2 || !strings.HasPrefix(stderr, "AUDIT INCOMPLETE: ") {
		t.Errorf("dead server: exit %d, stderr %q; want 2 and AUDIT INCOMPLETE", code, stderr)
	}
}
