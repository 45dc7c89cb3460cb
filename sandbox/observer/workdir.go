package observer

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// boundDir mounts a tmpfs of size bytes over dir, so that everything a run
// writes on the host (bind-mounted into the sandbox or written by runsc's
// trace) is bounded, and returns the unmount. An observation needs root
// already (runsc run, network namespaces); the mount is private to dir.
func boundDir(dir string, size int64) (func() error, error) {
	opts := fmt.Sprintf("size=%d,mode=0755", size)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return nil, fmt.Errorf("mounting a %d-byte tmpfs on %s: %w", size, dir, err)
	}
	return func() error {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmounting %s: %w", dir, err)
		}
		return nil
	}, nil
}
