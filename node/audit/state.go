package audit

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/histor-observer/histor/log/format"
)

// head is a verified histor.sth/v1 tree head.
type head struct {
	Raw  []byte // the signed document exactly as served; this is what the state file keeps
	Log  string // the did:key that signed it
	Size uint64
	Root [32]byte
}

func (h *head) rootHex() string { return hex.EncodeToString(h.Root[:]) }

// signed is h as evidence.
func (h *head) signed() format.SignedHead {
	return format.SignedHead{Raw: h.Raw, Size: h.Size, Root: h.Root}
}

// loadState reads the head kept by the previous run: the signed histor.sth/v1 document as the
// log served it (the same file HISTOR's Python auditor writes). No file means a first run.
// The kept head is re-verified against the key it names, so a damaged file is noticed; that is
// the auditor's own problem, never the log's, hence an *IncompleteError.
func loadState(path string) (*head, error) {
	if path == "" {
		return nil, nil
	}
	doc, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, incomplete("reading the kept head", err)
	}
	h, err := verifyKeptHead(doc)
	if err != nil {
		return nil, incomplete("reading the kept head "+path, err)
	}
	return h, nil
}

// saveState replaces the state file with h atomically: a crash leaves the old head or the new
// one, never a torn file.
func saveState(path string, h *head) error {
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return incomplete("saving the new head", err)
	}
	tmp, err := os.CreateTemp(dir, ".histor-audit-*")
	if err != nil {
		return incomplete("saving the new head", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(h.Raw); err != nil {
		tmp.Close()
		return incomplete("saving the new head", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return incomplete("saving the new head", err)
	}
	if err := tmp.Close(); err != nil {
		return incomplete("saving the new head", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return incomplete("saving the new head", fmt.Errorf("replacing %s: %w", path, err))
	}
	return syncDir(dir)
}

// syncDir makes the rename durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return incomplete("saving the new head", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return incomplete("saving the new head", fmt.Errorf("syncing %s: %w", dir, err))
	}
	return nil
}
