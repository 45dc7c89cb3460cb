package log

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const crashDirEnv = "HISTOR_LOG_CRASH_DIR"

// TestCrashChild is the child process of TestCrash: it appends until killed,
// printing "index id" for every entry only after Append has returned.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("only runs as TestCrash's child process")
	}
	l, err := Open(context.Background(), testConfig(dir))
	if err != nil {
		fmt.Fprintf(os.Stderr, "child open: %v\n", err)
		os.Exit(3)
	}
	run := os.Getenv("HISTOR_LOG_CRASH_RUN")
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				k := 1 + (i+g)%5
				entries := make([]Entry, k)
				for j := range entries {
					id := fmt.Sprintf("urn:uuid:crash-%s-%d-%d-%d", run, g, i, j)
					entries[j] = Entry{ID: id, Label: fmt.Appendf(nil, `{"id":%q}`, id)}
				}
				first, err := l.Append(context.Background(), entries, nil)
				if err != nil {
					fmt.Fprintf(os.Stderr, "child append: %v\n", err)
					os.Exit(4)
				}
				var b strings.Builder
				for j, e := range entries {
					fmt.Fprintf(&b, "%d %s\n", first+uint64(j), e.ID)
				}
				mu.Lock()
				os.Stdout.WriteString(b.String())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// TestCrash SIGKILLs an appending child at random moments; after each kill
// fsck must pass, every acknowledged label must be at its index, and the
// head must not have gone back.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a child process 24 times; run without -short")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	acked := map[uint64]string{}
	var lastSize uint64
	for run := range 24 {
		lines := runAndKill(t, dir, run, time.Duration(30+rng.IntN(400))*time.Millisecond)
		for _, line := range lines {
			var i uint64
			var id string
			if _, err := fmt.Sscanf(line, "%d %s", &i, &id); err != nil {
				t.Fatalf("child wrote %q", line)
			}
			if prev, ok := acked[i]; ok && prev != id {
				t.Fatalf("index %d acknowledged for %s and %s", i, prev, id)
			}
			acked[i] = id
		}
		lastSize = checkAfterCrash(t, dir, acked, lastSize)
		t.Logf("run %d: %d acknowledged this run, size %d", run, len(lines), lastSize)
	}
	if len(acked) == 0 {
		t.Fatal("the child never acknowledged anything")
	}
}

func runAndKill(t *testing.T, dir string, run int, after time.Duration) []string {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, fmt.Sprintf("HISTOR_LOG_CRASH_RUN=%d", run))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
	}()
	time.Sleep(after)
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("child ended by itself (%v): %s", err, stderr.String())
	}
	return lines
}

func checkAfterCrash(t *testing.T, dir string, acked map[uint64]string, lastSize uint64) uint64 {
	rep, err := Fsck(context.Background(), dir, nil)
	switch {
	case errors.Is(err, ErrNoLog) && len(acked) == 0 && lastSize == 0:
		// Killed before the log's creation finished: there is none yet.
	case err != nil:
		t.Fatalf("Fsck after kill: %v", err)
	case len(rep.Problems) > 0:
		t.Fatalf("Fsck after kill: %q", rep.Problems)
	}
	l, err := Open(context.Background(), testConfig(dir))
	if err != nil {
		t.Fatalf("Open after kill: %v", err)
	}
	defer l.Close()
	size := l.Size()
	if size < lastSize {
		t.Fatalf("head went back from %d to %d", lastSize, size)
	}
	for i, id := range acked {
		if i >= size {
			t.Fatalf("acknowledged index %d beyond size %d", i, size)
		}
		got, err := l.LabelIndex(id)
		if err != nil || got != i {
			t.Fatalf("label %s: index %d, %v; acknowledged at %d", id, got, err, i)
		}
	}
	return size
}
