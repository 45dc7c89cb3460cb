package gvisor

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Version
		wantErr bool
	}{
		{"runsc version 0.0~20240729.0\nspec: 1.2.0\n", Version{"0.0~20240729.0", 20240729, "1.2.0"}, false},
		{"runsc version 0.0~20221219.0\nspec: 1.0.2-dev\n", Version{"0.0~20221219.0", 20221219, "1.0.2-dev"}, false},
		{"runsc version release-20261005.0\nspec: 1.1.0\n", Version{"release-20261005.0", 20261005, "1.1.0"}, false},
		{"runsc version 1a2b3c\n", Version{"1a2b3c", 0, ""}, false},
		{"spec: 1.2.0\n", Version{}, true},
	} {
		got, err := ParseVersion(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseVersion(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestRunValidate(t *testing.T) {
	root := t.TempDir()
	good := Run{ID: IDPrefix + "x", Root: root, Args: []string{"/bin/true"}, UID: 65534, GID: 65534}
	for name, mut := range map[string]func(*Run){
		"no prefix":     func(r *Run) { r.ID = "other-1" },
		"relative root": func(r *Run) { r.Root = "root" },
		"no args":       func(r *Run) { r.Args = nil },
		"root uid":      func(r *Run) { r.UID = 0 },
		"mount on /":    func(r *Run) { r.Mounts = []Mount{{Source: "/usr", Destination: "/"}} },
		"relative dest": func(r *Run) { r.Mounts = []Mount{{Source: "/usr", Destination: "usr"}} },
	} {
		r := good
		mut(&r)
		if err := r.validate(); !errors.Is(err, ErrInvalidRun) {
			t.Errorf("%s: validate = %v, want ErrInvalidRun", name, err)
		}
	}
	if err := good.validate(); err != nil {
		t.Errorf("good run refused: %v", err)
	}
}

func TestVersionDescribe(t *testing.T) {
	rt := newTestRuntime(t)
	d := rt.Describe()
	if d.Name != "runsc" || d.Version == "" || d.Spec == "" || d.Platform != DefaultPlatform {
		t.Errorf("Describe = %+v", d)
	}
}

func TestStdoutThroughPipe(t *testing.T) {
	rt := newTestRuntime(t)
	r := testRun(t, "/bin/sh", "-c", "echo hello; id -u; echo oops >&2; exit 3")
	res := runIn(t, rt, r, 30*time.Second)
	if res.stdout != "hello\n65534\n" || res.stderr != "oops\n" {
		t.Errorf("stdout %q stderr %q", res.stdout, res.stderr)
	}
	if res.exit.End != EndExited || res.exit.Code != 3 {
		t.Errorf("exit = %+v, want exited 3", res.exit)
	}
	assertGone(t, rt, r.ID)
}

func TestSandboxPipes(t *testing.T) {
	rt := newTestRuntime(t)
	r := testRun(t, "/bin/sh", "-c", "read line; echo got $line")
	ctx := t.Context()
	s, err := rt.Start(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		s.Stdin.Write([]byte("ping\n"))
		s.Stdin.Close()
	}()
	go s.Stderr.Read(make([]byte, 1024))
	buf := make([]byte, 64)
	n, _ := s.Stdout.Read(buf)
	if got := string(buf[:n]); got != "got ping\n" {
		t.Errorf("stdout = %q", got)
	}
	if e := s.Wait(); e.End != EndExited || e.Code != 0 {
		t.Errorf("exit = %+v", e)
	}
}

func TestReadOnlyRoot(t *testing.T) {
	rt := newTestRuntime(t)
	r := testRun(t, "/bin/sh", "-c", "for p in /x /usr/x /etc/x /tmp/x; do if touch $p 2>/dev/null; then echo $p ok; else echo $p refused; fi; done")
	res := runIn(t, rt, r, 30*time.Second)
	want := "/x refused\n/usr/x refused\n/etc/x refused\n/tmp/x ok\n"
	if res.stdout != want {
		t.Errorf("stdout %q, want %q (stderr %q)", res.stdout, want, res.stderr)
	}
}

func TestTmpfsBounded(t *testing.T) {
	rt := newTestRuntime(t)
	r := testRun(t, "/bin/sh", "-c", "dd if=/dev/zero of=/tmp/f bs=1M count=100 2>/dev/null; wc -c < /tmp/f")
	res := runIn(t, rt, r, 60*time.Second)
	if strings.TrimSpace(res.stdout) != "67108864" {
		t.Errorf("bytes in /tmp = %q, want 67108864 (stderr %q)", res.stdout, res.stderr)
	}
}

func TestMemTotal(t *testing.T) {
	rt := newTestRuntime(t)
	r := testRun(t, "/bin/grep", "MemTotal", "/proc/meminfo")
	res := runIn(t, rt, r, 30*time.Second)
	if f := strings.Fields(res.stdout); len(f) < 2 || f[1] != "524288" {
		t.Errorf("meminfo %q, want MemTotal 524288 kB", res.stdout)
	}
}

func TestDeadlineKills(t *testing.T) {
	rt := newTestRuntime(t)
	r := testRun(t, "/bin/sleep", "1000")
	start := time.Now()
	res := runIn(t, rt, r, 2*time.Second)
	if res.exit.End != EndDeadline {
		t.Errorf("exit = %+v, want deadline", res.exit)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %v after a 2 s deadline", d)
	}
	assertGone(t, rt, r.ID)
}

func TestKillIdempotent(t *testing.T) {
	rt := newTestRuntime(t)
	r := testRun(t, "/bin/sleep", "1000")
	r.Stdout, r.Stderr = &strings.Builder{}, &strings.Builder{}
	s, err := rt.Start(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	s.Kill()
	s.Kill()
	if e := s.Wait(); e.End != EndKilled {
		t.Errorf("exit = %+v, want killed", e)
	}
	s.Kill()
	assertGone(t, rt, r.ID)
}
