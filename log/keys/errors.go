package keys

import (
	"fmt"
	"io/fs"
)

// Problem names what is wrong with a seed file.
type Problem int

const (
	// ProblemExists: Generate was asked to write over an existing file.
	ProblemExists Problem = iota + 1
	// ProblemSize: the file is not exactly SeedSize bytes.
	ProblemSize
	// ProblemMode: group or others have some access to the file.
	ProblemMode
	// ProblemNotRegular: the path is a link, directory or device.
	ProblemNotRegular
)

func (p Problem) String() string {
	switch p {
	case ProblemExists:
		return "file already exists"
	case ProblemSize:
		return "wrong size"
	case ProblemMode:
		return "readable or writable by group or others"
	case ProblemNotRegular:
		return "not a regular file"
	}
	return fmt.Sprintf("problem(%d)", int(p))
}

// FileError reports a seed file that Generate or Load refused.
type FileError struct {
	Path    string
	Problem Problem
	Size    int64       // set for ProblemSize
	Mode    fs.FileMode // set for ProblemMode and ProblemNotRegular
}

func (e *FileError) Error() string {
	switch e.Problem {
	case ProblemSize:
		return fmt.Sprintf("seed file %s: %v: %d bytes, want %d", e.Path, e.Problem, e.Size, SeedSize)
	case ProblemMode:
		return fmt.Sprintf("seed file %s: %v: mode %04o, want 0600 or stricter", e.Path, e.Problem, e.Mode.Perm())
	case ProblemNotRegular:
		return fmt.Sprintf("seed file %s: %v (%v)", e.Path, e.Problem, e.Mode.Type())
	}
	return fmt.Sprintf("seed file %s: %v", e.Path, e.Problem)
}
