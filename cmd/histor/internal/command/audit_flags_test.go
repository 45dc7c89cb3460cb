package command

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAuditRefusesNonPositiveBounds: zero would silently mean the library default and a
// negative timeout no timeout at all; both are usage errors, refused before any request.
func TestAuditRefusesNonPositiveBounds(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	cases := map[string][]string{
		"zero timeout":       {"--timeout", "0s"},
		"negative timeout":   {"--timeout", "-1s"},
		"zero deadline":      {"--deadline", "0s"},
		"negative deadline":  {"--deadline", "-5m"},
		"zero leaves":        {"--tiles", "--tiles-max-leaves", "0"},
		"negative leaves":    {"--tiles", "--tiles-max-leaves", "-1"},
		"timeout from env":   {"env:HISTOR_AUDIT_TIMEOUT=0s"},
		"deadline from file": {"file:deadline = \"0s\"\n"},
	}
	for name, extra := range cases {
		t.Run(name, func(t *testing.T) {
			args := []string{"audit", srv.URL}
			switch {
			case strings.HasPrefix(extra[0], "env:"):
				k, v, _ := strings.Cut(strings.TrimPrefix(extra[0], "env:"), "=")
				t.Setenv(k, v)
			case strings.HasPrefix(extra[0], "file:"):
				args = append([]string{"--config", writeConfig(t, strings.TrimPrefix(extra[0], "file:"))}, args...)
			default:
				args = append(args, extra...)
			}
			code, _, stderr := runCLI(args...)
			if code != 2 || !strings.Contains(stderr, "must be") {
				t.Errorf("exit %d, stderr %q; want 2 and what must be", code, stderr)
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests made with refused bounds", n)
	}
}

// TestAuditAcceptsPositiveBounds: the smallest bounds allowed run an audit.
func TestAuditAcceptsPositiveBounds(t *testing.T) {
	base := serveNode(t) // one entry: a checkpoint of size 1
	if code, out, stderr := runCLI("audit", base, "--tiles", "--tiles-max-leaves", "1", "--deadline", "1m", "--timeout", "1s"); code != 0 ||
		!strings.Contains(out, `"checkpointSize": 1`) {
		t.Errorf("exit %d: %s%s", code, out, stderr)
	}
}
