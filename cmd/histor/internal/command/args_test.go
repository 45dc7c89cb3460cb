package command

import (
	"bytes"
	"slices"
	"testing"
)

func TestInterspersed(t *testing.T) {
	app := newApp(deps{stdio: Stdio{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}})
	cases := []struct{ in, want []string }{
		{[]string{"histor", "audit", "http://x", "--state", "s", "--tiles"}, []string{"histor", "audit", "--state", "s", "--tiles", "--", "http://x"}},
		{[]string{"histor", "--config", "c", "audit", "--label=L", "http://x"}, []string{"histor", "--config", "c", "audit", "--label=L", "--", "http://x"}},
		{[]string{"histor", "digest", "-"}, []string{"histor", "digest", "--", "-"}},
		{[]string{"histor", "label", "verify", "a", "--", "-b"}, []string{"histor", "label", "verify", "--", "a", "-b"}},
		{[]string{"histor", "log", "fsck", "--data", "d"}, []string{"histor", "log", "fsck", "--data", "d"}},
		{[]string{"histor", "--log-level", "debug"}, []string{"histor", "--log-level", "debug"}},
		{[]string{"histor", "nosuch", "--x"}, []string{"histor", "nosuch", "--x"}},
		// sandbox runs itself for a SPEC and has subcommands (worker, worker-key).
		{[]string{"histor", "sandbox", "npm:x@1", "--json", "--rootfs", "r"}, []string{"histor", "sandbox", "--json", "--rootfs", "r", "--", "npm:x@1"}},
		{[]string{"histor", "sandbox", "worker", "--queue", "u"}, []string{"histor", "sandbox", "worker", "--queue", "u"}},
	}
	for _, tc := range cases {
		if got := interspersed(app, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("interspersed(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
