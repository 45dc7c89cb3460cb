package observer

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestBoundDir: what a run writes into its work directory stops at the
// bound with ENOSPC, and the directory is an ordinary one again after.
func TestBoundDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	dir := t.TempDir()
	unmount, err := boundDir(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	var written int
	for written < 4<<20 {
		n, err := f.Write(chunk)
		written += n
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("write: %v, want ENOSPC", err)
			}
			break
		}
	}
	f.Close()
	if written > 1<<20 {
		t.Fatalf("wrote %d bytes into a 1 MiB work directory", written)
	}
	if err := unmount(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "fill")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file outlived the unmount: %v", err)
	}
}
