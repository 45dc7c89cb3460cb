// Package faultfs wraps a Pebble vfs.FS so a test can fail its writes, syncs, renames,
// removals and closes, one after another or from some call on, or fill the disk, and see what
// a store built on it makes of the failure. Reads are never failed: the stores' read faults
// are tried over their in-memory stand-ins.
package faultfs

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/cockroachdb/pebble/vfs"
)

// Op is a kind of mutating call.
type Op int

const (
	Write  Op = iota // Write, WriteAt, Preallocate of a file
	Sync             // Sync, SyncData, SyncTo of a file or a directory
	Create           // Create, OpenReadWrite, Link, MkdirAll
	Rename           // Rename, ReuseForWrite
	Remove           // Remove, RemoveAll
	Close            // Close of a file opened for writing
)

// Ops lists every kind, in order.
var Ops = []Op{Write, Sync, Create, Rename, Remove, Close}

func (o Op) String() string {
	switch o {
	case Write:
		return "write"
	case Sync:
		return "sync"
	case Create:
		return "create"
	case Rename:
		return "rename"
	case Remove:
		return "remove"
	case Close:
		return "close"
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// ErrInjected is what a Plan's fault returns.
var ErrInjected = errors.New("injected storage fault")

// Injector is asked before every mutating call whether it fails: nil lets it through. bytes is
// the length of a write (0 for the other kinds). It is called from many goroutines.
type Injector interface {
	Inject(op Op, path string, bytes int) error
}

// Wrap returns fs with every mutating call first put to inj.
func Wrap(fs vfs.FS, inj Injector) vfs.FS { return &faultFS{FS: fs, inj: inj} }

type faultFS struct {
	vfs.FS
	inj Injector
}

func (f *faultFS) wrap(file vfs.File, path string, writable bool, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, path: path, writable: writable, inj: f.inj}, nil
}

func (f *faultFS) Create(name string) (vfs.File, error) {
	if err := f.inj.Inject(Create, name, 0); err != nil {
		return nil, &os.PathError{Op: "create", Path: name, Err: err}
	}
	file, err := f.FS.Create(name)
	return f.wrap(file, name, true, err)
}

func (f *faultFS) OpenReadWrite(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if err := f.inj.Inject(Create, name, 0); err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	file, err := f.FS.OpenReadWrite(name, opts...)
	return f.wrap(file, name, true, err)
}

func (f *faultFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	file, err := f.FS.Open(name, opts...)
	return f.wrap(file, name, false, err)
}

func (f *faultFS) OpenDir(name string) (vfs.File, error) {
	file, err := f.FS.OpenDir(name)
	return f.wrap(file, name, false, err)
}

func (f *faultFS) Link(oldname, newname string) error {
	if err := f.inj.Inject(Create, newname, 0); err != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: err}
	}
	return f.FS.Link(oldname, newname)
}

func (f *faultFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := f.inj.Inject(Create, dir, 0); err != nil {
		return &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	return f.FS.MkdirAll(dir, perm)
}

func (f *faultFS) Rename(oldname, newname string) error {
	if err := f.inj.Inject(Rename, newname, 0); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return f.FS.Rename(oldname, newname)
}

func (f *faultFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	if err := f.inj.Inject(Rename, newname, 0); err != nil {
		return nil, &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	file, err := f.FS.ReuseForWrite(oldname, newname)
	return f.wrap(file, newname, true, err)
}

func (f *faultFS) Remove(name string) error {
	if err := f.inj.Inject(Remove, name, 0); err != nil {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	return f.FS.Remove(name)
}

func (f *faultFS) RemoveAll(name string) error {
	if err := f.inj.Inject(Remove, name, 0); err != nil {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	return f.FS.RemoveAll(name)
}

type faultFile struct {
	vfs.File
	path     string
	writable bool
	inj      Injector
}

func (f *faultFile) fail(op Op, bytes int) error {
	if err := f.inj.Inject(op, f.path, bytes); err != nil {
		return &os.PathError{Op: op.String(), Path: f.path, Err: err}
	}
	return nil
}

func (f *faultFile) Write(p []byte) (int, error) {
	if err := f.fail(Write, len(p)); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fail(Write, len(p)); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Preallocate(offset, length int64) error {
	if err := f.fail(Write, 0); err != nil {
		return err
	}
	return f.File.Preallocate(offset, length)
}

func (f *faultFile) Sync() error {
	if err := f.fail(Sync, 0); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultFile) SyncData() error {
	if err := f.fail(Sync, 0); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f *faultFile) SyncTo(length int64) (bool, error) {
	if err := f.fail(Sync, 0); err != nil {
		return false, err
	}
	return f.File.SyncTo(length)
}

// Close closes the file even when the fault fires, so a failed close leaks nothing; only
// its answer is the fault.
func (f *faultFile) Close() error {
	var err error
	if f.writable {
		err = f.fail(Close, 0)
	}
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}

// Plan fails the At-th call (from 1) of the kinds it names (none: every kind), and, if Sticky,
// every such call after it: a disk that died. An At of 0 fails nothing and only counts.
type Plan struct {
	Kinds  []Op
	At     int
	Sticky bool

	mu    sync.Mutex
	seen  int
	fired []string
}

// Inject implements Injector.
func (p *Plan) Inject(op Op, path string, _ int) error {
	if len(p.Kinds) > 0 && !slices.Contains(p.Kinds, op) {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen++
	if p.At == 0 || p.seen < p.At || (p.seen > p.At && !p.Sticky) {
		return nil
	}
	p.fired = append(p.fired, fmt.Sprintf("%s %s (call %d)", op, path, p.seen))
	return ErrInjected
}

// Seen is how many calls of the plan's kinds were made.
func (p *Plan) Seen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen
}

// Fired lists the calls failed, in order.
func (p *Plan) Fired() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.fired...)
}

// Full is a disk with room for Bytes more bytes of writes: a write that does not fit fails
// whole with ENOSPC, as does every later one that does not fit. Syncs, renames and the rest
// still succeed, as on a full disk.
type Full struct {
	Bytes int64

	mu      sync.Mutex
	used    int64
	refused int
}

// Inject implements Injector.
func (f *Full) Inject(op Op, path string, bytes int) error {
	if op != Write {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.used+int64(bytes) > f.Bytes {
		f.refused++
		return syscall.ENOSPC
	}
	f.used += int64(bytes)
	return nil
}

// Refused is how many writes did not fit.
func (f *Full) Refused() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}

// Used is how many bytes were written.
func (f *Full) Used() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.used
}

// Matching fails every call of its kinds (none: every kind) on a path that ends in Suffix:
// with ".sst", a disk on which Pebble can write its WAL but no table, so every flush and
// compaction fails while commits go on.
type Matching struct {
	Suffix string
	Kinds  []Op

	mu    sync.Mutex
	fired int
}

// Inject implements Injector.
func (m *Matching) Inject(op Op, path string, _ int) error {
	if !strings.HasSuffix(path, m.Suffix) || len(m.Kinds) > 0 && !slices.Contains(m.Kinds, op) {
		return nil
	}
	m.mu.Lock()
	m.fired++
	m.mu.Unlock()
	return ErrInjected
}

// Fired is how many calls m failed.
func (m *Matching) Fired() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fired
}
