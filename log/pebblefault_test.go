package log

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/faultfs"
	"github.com/histor-observer/histor/internal/pebbledb"
	"github.com/histor-observer/histor/internal/promset/promtest"
)

func storageFault(err error) bool { return faultfs.IsFault(err) }

// pebbleFault is one run of the fault scenario on Pebble over a disk kept in memory, whose
// unsynced writes a crash loses.
type pebbleFault struct {
	t   *testing.T
	mem *vfs.MemFS
	sw  *faultfs.Switch
	reg *prometheus.Registry
}

func newPebbleFault(t *testing.T) *pebbleFault {
	return &pebbleFault{t: t, mem: vfs.NewStrictMem(), sw: &faultfs.Switch{}, reg: prometheus.NewRegistry()}
}

func (p *pebbleFault) config(fs vfs.FS) Config {
	cfg := testConfig("log")
	cfg.FS = fs
	return cfg
}

// run opens the log, arms inj and plays the scenario; it returns what was acknowledged.
func (p *pebbleFault) run(inj faultfs.Injector) *faultRun {
	t := p.t
	cfg := p.config(faultfs.Wrap(p.mem, p.sw))
	cfg.Registerer = p.reg
	l, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("opening before the fault: %v", err)
	}
	p.sw.Arm(inj)
	r := &faultRun{t: t, l: l, acked: map[uint64]string{}, injected: storageFault}
	r.scenario()
	r.stoppedSaysSo()
	if want := map[bool]float64{false: 0, true: 1}[r.failed != nil]; promtest.Value(t, p.reg, "histor_log_stopped") != want {
		t.Fatalf("histor_log_stopped is %v, want %v (failed: %v)", promtest.Value(t, p.reg, "histor_log_stopped"), want, r.failed)
	}
	if err := l.Close(); err != nil && !storageFault(err) {
		t.Fatalf("closing after the fault: %v", err)
	}
	p.sw.Arm(nil)
	return r
}

// stoppedSaysSo: once a call failed, the log refuses appends with a *StoppedError naming
// the fault, Stopped says so, and histor_log_stopped is 1; while none failed, it takes them.
func (r *faultRun) stoppedSaysSo() {
	t := r.t
	_, err := r.l.Append(context.Background(), []Entry{testEntry(10_000)}, nil)
	var se *StoppedError
	switch {
	case r.failed != nil:
		if !errors.As(err, &se) || !r.isInjected(err) {
			t.Fatalf("an append after %v: %v, want a *StoppedError naming the fault", r.failed, err)
		}
		if stopped := r.l.Stopped(); stopped == nil || !r.isInjected(stopped) {
			t.Fatalf("Stopped after a failure: %v", stopped)
		}
	case err != nil && !r.isInjected(err):
		t.Fatalf("an append: %v", err)
	case err != nil:
		r.failed = err
	default:
		r.acked[r.size] = testEntry(10_000).ID
		r.size++
	}
}

// verify crashes the disk (unsynced writes lost), then checks what it kept: fsck passes,
// the log reopens at no smaller a size than was acknowledged, with every acknowledged label
// at its index, and takes appends again.
func (p *pebbleFault) verify(r *faultRun) {
	t := p.t
	p.mem.ResetToSyncedState()
	rep, err := fsckDir(context.Background(), p.mem, "log", discardLogger())
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("fsck after the fault: %v %+v", err, rep)
	}
	l, err := Open(context.Background(), p.config(p.mem))
	if err != nil {
		t.Fatalf("reopening after the fault: %v", err)
	}
	defer l.Close()
	if l.Size() < r.size || rep.Size != l.Size() {
		t.Fatalf("reopened at size %d (fsck %d); %d was acknowledged", l.Size(), rep.Size, r.size)
	}
	for i, id := range r.acked {
		if got, err := l.LabelIndex(id); err != nil || got != i {
			t.Fatalf("acknowledged label %s: index %d, %v; want %d", id, got, err, i)
		}
	}
	if _, err := l.Append(context.Background(), []Entry{testEntry(20_000)}, nil); err != nil {
		t.Fatalf("appending after reopening: %v", err)
	}
}

// TestPebbleFaults plays the fault scenario on the real store, Pebble, over a disk that fails:
// each write, sync, create, rename, remove and close after Open in turn, once (a transient
// error) and from then on (a disk that died), and a disk that fills at several points. After
// each: the failed call is never acknowledged, the log stops and says so (a *StoppedError,
// Stopped, histor_log_stopped), no process-ending panic, and the disk as a crash leaves it
// passes fsck and reopens with every acknowledged label, its head not behind.
func TestPebbleFaults(t *testing.T) {
	counts := map[faultfs.Op]int{}
	var written int64
	{
		p := newPebbleFault(t)
		plans := map[faultfs.Op]*faultfs.Plan{}
		var all faultfs.All
		for _, op := range faultfs.Ops {
			plans[op] = &faultfs.Plan{Kinds: []faultfs.Op{op}}
			all = append(all, plans[op])
		}
		room := &faultfs.Full{Bytes: 1 << 40}
		all = append(all, room)
		r := p.run(all)
		if r.failed != nil {
			t.Fatalf("a scenario without faults failed: %v", r.failed)
		}
		p.verify(r)
		for op, plan := range plans {
			counts[op] = plan.Seen()
		}
		written = room.Used()
	}
	t.Logf("mutating calls in the scenario: %v; %d bytes written", counts, written)
	if counts[faultfs.Write] == 0 || counts[faultfs.Sync] == 0 {
		t.Fatalf("the scenario wrote nothing the test could fail: %v", counts)
	}
	stopped := 0
	for _, op := range faultfs.Ops {
		for _, at := range faultfs.Spread(counts[op], 12) {
			for _, sticky := range []bool{false, true} {
				name := fmt.Sprintf("%s#%d/%s", op, at, map[bool]string{false: "once", true: "from-then-on"}[sticky])
				t.Run(name, func(t *testing.T) {
					p := newPebbleFault(t)
					plan := &faultfs.Plan{Kinds: []faultfs.Op{op}, At: at, Sticky: sticky}
					r := p.run(plan)
					if len(plan.Fired()) == 0 && plan.Seen() < at {
						// Pebble removes obsolete files in the background: how many calls of a kind a run
						// makes before it ends can vary with timing.
						t.Skipf("this run made %d such calls, not %d", plan.Seen(), at)
					}
					if len(plan.Fired()) == 0 {
						t.Fatalf("the fault never fired (%d calls)", plan.Seen())
					}
					if r.failed != nil {
						stopped++
					}
					p.verify(r)
				})
			}
		}
	}
	for _, frac := range []int64{10, 50, 90} {
		t.Run(fmt.Sprintf("full-disk-at-%d%%", frac), func(t *testing.T) {
			p := newPebbleFault(t)
			full := &faultfs.Full{Bytes: written * frac / 100}
			r := p.run(full)
			if full.Refused() == 0 || r.failed == nil {
				t.Fatalf("a disk full at %d of %d bytes refused %d writes and stopped nothing (%v)", full.Bytes, written, full.Refused(), r.failed)
			}
			if !errors.Is(r.failed, syscall.ENOSPC) {
				t.Fatalf("the log stopped on %v, not the full disk", r.failed)
			}
			stopped++
			p.verify(r)
		})
	}
	if stopped == 0 {
		t.Fatal("no fault stopped the log: the test failed nothing that mattered")
	}
}

const faultChildEnv = "HISTOR_LOG_FAULT_CHILD"

// faultChild is what one child process is asked to do: open the log in Dir, arming the
// plan from the start ("open") or once it is open ("append": then append through Pebble's
// flushes and compactions, its memtable made small).
type faultChild struct {
	Mode   string
	Dir    string
	Op     faultfs.Op
	At     int
	Sticky bool
}

func (c faultChild) env() string {
	return fmt.Sprintf("%s=%s %s %d %d %v", faultChildEnv, c.Mode, c.Dir, c.Op, c.At, c.Sticky)
}

// TestPebbleFaultChild is the child process of TestPebbleFaultsInChild. It prints "opened N"
// or "refused FAULT?", then for each append "acked INDEX ID" or "stopped FAULT?", then
// "calls OP=N…", and exits 0, unless Pebble found it could not go on in one of its own
// goroutines: then the process ends, having logged why.
func TestPebbleFaultChild(t *testing.T) {
	v := os.Getenv(faultChildEnv)
	if v == "" {
		t.Skip("only runs as TestPebbleFaultsInChild's child process")
	}
	pebbledb.FatalCloseWait = 200 * time.Millisecond // the bound is what is tested, not its length
	var c faultChild
	var op int
	if _, err := fmt.Sscanf(v, "%s %s %d %d %t", &c.Mode, &c.Dir, &op, &c.At, &c.Sticky); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	c.Op = faultfs.Op(op)
	counts := map[faultfs.Op]*faultfs.Plan{}
	all := faultfs.All{&faultfs.Plan{Kinds: []faultfs.Op{c.Op}, At: c.At, Sticky: c.Sticky}}
	for _, o := range faultfs.Ops {
		counts[o] = &faultfs.Plan{Kinds: []faultfs.Op{o}}
		all = append(all, counts[o])
	}
	sw := &faultfs.Switch{}
	cfg := testConfig(c.Dir)
	cfg.FS = faultfs.Wrap(vfs.Default, sw)
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg.memTableBytes = 64 << 10
	if c.Mode == "open" {
		sw.Arm(all)
	}
	l, err := Open(context.Background(), cfg)
	if err != nil {
		fmt.Println("refused", storageFault(err), err)
		os.Exit(0)
	}
	fmt.Println("opened", l.Size())
	if c.Mode == "append" {
		sw.Arm(all)
		childAppends(l)
	}
	l.Close()
	fmt.Print("calls")
	for _, o := range faultfs.Ops {
		fmt.Printf(" %d=%d", o, counts[o].Seen())
	}
	fmt.Println()
	os.Exit(0)
}

// childAppends appends 2,000 labels of about 1 KiB in batches of 50, printing each
// acknowledged one, until an append fails.
func childAppends(l *Log) {
	pad := strings.Repeat("x", 1000)
	for b := range 40 {
		entries := make([]Entry, 50)
		for i := range entries {
			id := fmt.Sprintf("urn:uuid:child-%04d-%02d", b, i)
			entries[i] = Entry{ID: id, Label: fmt.Appendf(nil, `{"id":%q,"pad":%q}`, id, pad)}
		}
		first, err := l.Append(context.Background(), entries, nil)
		if err != nil {
			fmt.Println("stopped", storageFault(err), err)
			return
		}
		for i, e := range entries {
			fmt.Println("acked", first+uint64(i), e.ID)
		}
	}
}

// childResult is what the parent read of one child.
type childResult struct {
	opened, refused, stopped, ended bool
	acked                           map[uint64]string
	calls                           map[faultfs.Op]int
}

// runFaultChild runs one child to its end, within a bound, and checks that it ended in one
// of the ways allowed: it opened, or it refused or stopped naming the fault, or Pebble ended
// the process after logging why.
func runFaultChild(t *testing.T, c faultChild) childResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPebbleFaultChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), c.env())
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the child did not end within 60 s (a hang); its log:\n%s", stderr.String())
	}
	res := childResult{acked: map[uint64]string{}, calls: map[faultfs.Op]int{}}
	for line := range strings.Lines(stdout.String()) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "opened":
			res.opened = true
		case len(f) >= 2 && (f[0] == "refused" || f[0] == "stopped"):
			if f[1] != "true" {
				t.Fatalf("the child was %s without naming the fault: %s", f[0], line)
			}
			res.refused, res.stopped = res.refused || f[0] == "refused", res.stopped || f[0] == "stopped"
		case len(f) == 3 && f[0] == "acked":
			var i uint64
			fmt.Sscan(f[1], &i)
			res.acked[i] = f[2]
		case len(f) >= 1 && f[0] == "calls":
			for _, kv := range f[1:] {
				var op, n int
				fmt.Sscanf(kv, "%d=%d", &op, &n)
				res.calls[faultfs.Op(op)] = n
			}
		}
	}
	if err != nil {
		if !strings.Contains(stderr.String(), "pebble cannot go on") {
			t.Fatalf("the child ended (%v) without saying why:\n%s", err, stderr.String())
		}
		res.ended = true
	}
	return res
}

// TestPebbleFaultsInChild fails, in a child process over a real directory, each mutating
// call in turn (once and from then on) of reopening a stored log (Open flushes the replayed
// WAL: a table written and synced, the MANIFEST, CURRENT, old files removed), and of
// appending 2 MB through Pebble's flushes and compactions. The child opens, or refuses or
// stops naming the fault, or, when Pebble meets the fault in its own goroutine, ends after
// logging why; it never hangs. After each, the directory passes fsck and reopens with every
// label acknowledged, its size not behind.
func TestPebbleFaultsInChild(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 150 child processes; run without -short")
	}
	stored := t.TempDir()
	l := openTest(t, testConfig(stored))
	appendN(t, l, 0, 300)
	l.Close()
	outcomes := map[string]int{}
	for _, mode := range []string{"open", "append"} {
		clean := runFaultChild(t, faultChild{Mode: mode, Dir: copyDir(t, stored)})
		t.Logf("%s: mutating calls %v", mode, clean.calls)
		if !clean.opened || clean.stopped || clean.ended {
			t.Fatalf("%s without faults: %+v", mode, clean)
		}
		for _, op := range faultfs.Ops {
			for _, at := range faultfs.Spread(clean.calls[op], 6) {
				for _, sticky := range []bool{false, true} {
					c := faultChild{Mode: mode, Dir: copyDir(t, stored), Op: op, At: at, Sticky: sticky}
					res := runFaultChild(t, c)
					outcomes[mode+" "+res.outcome()]++
					checkReopens(t, c.Dir, 300, res.acked)
				}
			}
		}
	}
	t.Logf("outcomes: %v", outcomes)
	if outcomes["open refused"] == 0 || outcomes["append stopped"]+outcomes["append ended"] == 0 {
		t.Fatalf("the faults stopped nothing: %v", outcomes)
	}
}

func (r childResult) outcome() string {
	switch {
	case r.ended:
		return "ended"
	case r.refused:
		return "refused"
	case r.stopped:
		return "stopped"
	}
	return "opened"
}

// checkReopens: dir passes fsck and opens holding at least the stored entries and every
// acknowledged label at its index.
func checkReopens(t *testing.T, dir string, stored uint64, acked map[uint64]string) {
	t.Helper()
	rep, err := Fsck(context.Background(), dir, nil)
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("fsck after the child: %v %+v", err, rep)
	}
	l, err := Open(context.Background(), testConfig(dir))
	if err != nil {
		t.Fatalf("reopening after the child: %v", err)
	}
	defer l.Close()
	if l.Size() < stored+uint64(len(acked)) {
		t.Fatalf("reopened at %d; %d stored and %d acknowledged", l.Size(), stored, len(acked))
	}
	for i, id := range acked {
		if got, err := l.LabelIndex(id); err != nil || got != i {
			t.Fatalf("acknowledged label %s: index %d, %v; want %d", id, got, err, i)
		}
	}
}

func copyDir(t *testing.T, dir string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "log")
	if err := os.CopyFS(to, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return to
}
