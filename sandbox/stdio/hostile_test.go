package stdio

import (
	"context"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/histor-observer/histor/sandbox"
)

// fast bounds the real-process tests whose server hangs, so it costs a
// second, not the production 45 s. A case that must not time out gets
// roomy bounds instead: the child process starts on a loaded machine, ten
// at once, and a short bound would make its status a matter of timing.
var (
	fast  = Config{InitTimeout: 700 * time.Millisecond, SessionTimeout: 20 * time.Second, CallTimeout: 700 * time.Millisecond}
	roomy = Config{InitTimeout: 20 * time.Second, SessionTimeout: 30 * time.Second, CallTimeout: 10 * time.Second}
	// hangCall is the hang case's: its first call must time out, its
	// second answer within it.
	hangCall = Config{InitTimeout: 20 * time.Second, SessionTimeout: 30 * time.Second, CallTimeout: 3 * time.Second}
)

// TestHostileProcesses talks to misbehaving servers running as child
// processes and checks every one ends in its status within its bound.
func TestHostileProcesses(t *testing.T) {
	cases := []struct {
		fake   string
		status sandbox.Status
		check  func(t *testing.T, r *Result)
	}{
		{"silent", sandbox.StatusTimeout, func(t *testing.T, r *Result) { wantIn(t, r.Detail, "initialize") }},
		{"deaf", sandbox.StatusTimeout, func(t *testing.T, r *Result) { wantIn(t, r.Detail, "initialize") }},
		{"endless", sandbox.StatusTooLarge, func(t *testing.T, r *Result) {
			if r.BytesRead < DefaultMaxOutputBytes || r.BytesRead > DefaultMaxOutputBytes+readChunk {
				t.Errorf("read %d bytes, want just over %d", r.BytesRead, DefaultMaxOutputBytes)
			}
		}},
		{"hugeline", sandbox.StatusTooLarge, func(t *testing.T, r *Result) {
			wantIn(t, r.Detail, "line")
			if r.BytesRead > DefaultMaxLineBytes+2*readChunk {
				t.Errorf("read %d bytes of a 100 MB line, want about the %d byte bound", r.BytesRead, DefaultMaxLineBytes)
			}
		}},
		{"garbage", sandbox.StatusOK, func(t *testing.T, r *Result) {
			if len(r.Tools) != 1 || r.Calls.Successful != 1 || r.ServerInfo["name"] != "fake" {
				t.Errorf("tools %v, calls %+v, serverInfo %v", r.Tools, r.Calls, r.ServerInfo)
			}
		}},
		{"manytools", sandbox.StatusTooManyTools, func(t *testing.T, r *Result) {
			if r.Tools != nil {
				t.Errorf("kept %d tools of a refused listing", len(r.Tools))
			}
		}},
		{"manypages", sandbox.StatusTooManyPages, func(t *testing.T, r *Result) {
			if r.Pages != DefaultMaxPages {
				t.Errorf("read %d pages, want %d", r.Pages, DefaultMaxPages)
			}
		}},
		{"asks", sandbox.StatusOK, func(t *testing.T, r *Result) {
			if len(r.Tools) != 1 || toolName(r.Tools[0]) != "declined-rightly" {
				t.Errorf("the server's requests were not declined as specified: %v", r.Tools)
			}
		}},
		{"hang", sandbox.StatusOK, func(t *testing.T, r *Result) { checkHang(t, r, hangCall.CallTimeout) }},
		{"exits", sandbox.StatusExited, func(t *testing.T, r *Result) {
			wantIn(t, r.Detail, "tools/list")
			if r.Tools != nil || !r.Listed.IsZero() {
				t.Errorf("an unfinished listing kept tools %v, listed at %v", r.Tools, r.Listed)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.fake, func(t *testing.T) {
			t.Parallel()
			p := startFake(t, tc.fake)
			cfg := roomy
			switch {
			case tc.status == sandbox.StatusTimeout:
				cfg = fast
			case tc.fake == "hang":
				cfg = hangCall
			}
			start := time.Now()
			r := Talk(context.Background(), cfg, p.run(testCanary))
			if elapsed := time.Since(start); elapsed > cfg.SessionTimeout+5*time.Second {
				t.Errorf("session took %s", elapsed)
			}
			if r.Status != tc.status {
				t.Fatalf("status %s (%s), want %s", r.Status, r.Detail, tc.status)
			}
			tc.check(t, r)
		})
	}
}

// checkHang: the hanging call times out, the next one is still made.
func checkHang(t *testing.T, r *Result, callTimeout time.Duration) {
	t.Helper()
	c := r.Calls
	if c.Total != 2 || c.Attempted != 2 || c.Timeouts != 1 || c.Successful != 1 || c.Complete || len(c.Outcomes) != 2 {
		t.Fatalf("coverage %+v", c)
	}
	slow, quick := c.Outcomes[0], c.Outcomes[1]
	if slow.Tool != "slow" || slow.Status != OutcomeTimeout || quick.Tool != "fast" || quick.Status != OutcomeSuccess {
		t.Errorf("outcomes %+v", c.Outcomes)
	}
	if got := time.Duration(slow.Seconds * float64(time.Second)); got < callTimeout || got > callTimeout+2*time.Second {
		t.Errorf("the hanging call took %s, want about %s", got, callTimeout)
	}
}

// pipeServer runs a fake in-process over io.Pipe, for tests under
// synctest's fake clock. The returned function ends it.
func pipeServer(name string) (Run, func()) {
	cr, sw := io.Pipe() // server stdout → client
	sr, cw := io.Pipe() // client → server stdin
	go func() {
		play(fakes[name], newFake(sr, sw))
		sw.Close()
	}()
	return Run{Stdin: cw, Stdout: cr, Canary: testCanary}, func() {
		cw.CloseWithError(io.ErrClosedPipe)
		sr.CloseWithError(io.ErrClosedPipe)
		cr.CloseWithError(io.ErrClosedPipe)
	}
}

// TestDeadlines checks the production deadlines exactly, on a fake clock.
func TestDeadlines(t *testing.T) {
	t.Run("init 45 s", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			run, end := pipeServer("silent")
			defer end()
			start := time.Now()
			r := Talk(context.Background(), Config{}, run)
			if r.Status != sandbox.StatusTimeout || time.Since(start) != DefaultInitTimeout {
				t.Errorf("status %s after %s, want timeout after %s", r.Status, time.Since(start), DefaultInitTimeout)
			}
		})
	})
	t.Run("call 8 s", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			run, end := pipeServer("hang")
			defer end()
			r := Talk(context.Background(), Config{}, run)
			if r.Status != sandbox.StatusOK {
				t.Fatalf("status %s (%s)", r.Status, r.Detail)
			}
			checkHang(t, r, DefaultCallTimeout)
			if r.Calls.Outcomes[0].Seconds != 8 {
				t.Errorf("hanging call took %vs on the fake clock, want 8", r.Calls.Outcomes[0].Seconds)
			}
		})
	})
	t.Run("session 150 s", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			run, end := pipeServer("silent")
			defer end()
			run.Started = time.Now().Add(-DefaultSessionTimeout + time.Second) // started 149 s ago
			start := time.Now()
			r := Talk(context.Background(), Config{InitTimeout: 2 * DefaultSessionTimeout}, run)
			if r.Status != sandbox.StatusTimeout || time.Since(start) != time.Second {
				t.Errorf("status %s after %s, want timeout after 1s", r.Status, time.Since(start))
			}
		})
	})
	t.Run("cancelled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			run, end := pipeServer("silent")
			defer end()
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(time.Second, cancel)
			r := Talk(ctx, Config{}, run)
			if r.Status != sandbox.StatusInspectionFailed || !r.Status.Infrastructure() {
				t.Errorf("status %s, want inspection-failed (the caller stopped, not the server)", r.Status)
			}
		})
	})
}

// TestCanaryCalls: the arguments a server receives are canaries, skipped
// tools are not called and do not count, answers are kept.
func TestCanaryCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		run, end := pipeServer("canaries")
		defer end()
		r := Talk(context.Background(), Config{}, run)
		if r.Status != sandbox.StatusOK {
			t.Fatalf("status %s (%s)", r.Status, r.Detail)
		}
		c := r.Calls
		if c.Total != 5 || c.Attempted != 3 || c.Successful != 3 || c.Skipped != 2 || c.Complete {
			t.Errorf("coverage %+v", c)
		}
		want := map[string]string{
			"send_mail": `"to":"canary-r1@histor-trap.invalid"`,
			"fetch":     `"url":"https://histor-trap.invalid/r1"`,
			"read":      `{"limit":3,"path":"/home/histor/notes/canary.txt"}`,
		}
		if len(r.Answers) != 3 {
			t.Fatalf("answers %+v", r.Answers)
		}
		for _, a := range r.Answers {
			if !strings.Contains(a.Text, want[a.Tool]) || !strings.Contains(a.JSON, `"type":"text"`) {
				t.Errorf("%s answered %q / %q, want it to have received %s", a.Tool, a.Text, a.JSON, want[a.Tool])
			}
		}
		for _, o := range c.Outcomes[3:] {
			if o.Status != OutcomeSkipped || o.Reason == "" {
				t.Errorf("outcome %+v, want skipped with a reason", o)
			}
		}
		if r.Listed.Before(r.Started) || r.Ended.Before(r.Listed) {
			t.Errorf("timestamps out of order: %v %v %v", r.Started, r.Listed, r.Ended)
		}
	})
}

// TestNoCalls: a negative MaxCalls lists and calls nothing; the tools still
// count, as skipped.
func TestNoCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		run, end := pipeServer("canaries")
		defer end()
		r := Talk(context.Background(), Config{MaxCalls: -1}, run)
		if r.Status != sandbox.StatusOK || r.Calls.Attempted != 0 || r.Calls.Skipped != 5 || len(r.Answers) != 0 {
			t.Errorf("status %s, coverage %+v", r.Status, r.Calls)
		}
	})
}

func wantIn(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%q does not mention %q", s, sub)
	}
}
