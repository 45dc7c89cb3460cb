package trap

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// netnsDir is where iproute2 keeps named network namespaces.
const netnsDir = "/var/run/netns"

// inNetns runs fn on a dedicated OS thread that has joined the network
// namespace at path. Sockets fn creates belong to that namespace for their
// whole life and can be used from any goroutine afterwards. The thread is
// never unlocked: the goroutine exits still locked, so Go ends the thread
// instead of letting other goroutines run in the wrong namespace.
func inNetns(path string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(path)
		if err != nil {
			errc <- fmt.Errorf("opening netns: %w", err)
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("joining netns %s: %w", path, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// run runs one command with stdin, returning its stderr in the error.
func run(ctx context.Context, stdin string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// writeSysctls writes /proc/sys values on a thread inside the namespace at
// path: /proc/sys/net shows the namespace of the thread that opens it.
// Absent keys (no IPv6 in this kernel) are skipped when optional.
func writeSysctls(path string, values []sysctl) error {
	return inNetns(path, func() error {
		for _, v := range values {
			err := os.WriteFile("/proc/sys/"+v.key, []byte(v.value), 0)
			if err != nil && !(v.optional && os.IsNotExist(err)) {
				return fmt.Errorf("setting %s: %w", v.key, err)
			}
		}
		return nil
	})
}

type sysctl struct {
	key, value string
	optional   bool
}
