package gvisor

import (
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// BenchmarkRunTrue is Start+Wait of `true` in a bind-mount root: bundle,
// runsc run, and the cleanup checks.
func BenchmarkRunTrue(b *testing.B) {
	rt := newTestRuntime(b)
	root, mounts := bindRoot(b)
	for b.Loop() {
		r := Run{ID: NewID(), Root: root, Mounts: mounts, Args: []string{"/bin/true"}, UID: 65534, GID: 65534,
			Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard}
		s, err := rt.Start(b.Context(), r)
		if err != nil {
			b.Fatal(err)
		}
		if e := s.Wait(); e.End != EndExited || e.Code != 0 {
			b.Fatalf("exit %+v", e)
		}
	}
}

// BenchmarkBareRunscDoTrue is the floor: `runsc --rootless --network=none do true`.
func BenchmarkBareRunscDoTrue(b *testing.B) {
	needRunsc(b)
	for b.Loop() {
		cmd := exec.Command("runsc", "--rootless", "--network=none", "do", "true")
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		cmd.WaitDelay = time.Second
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}
