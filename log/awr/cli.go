package awr

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// maxLabelFile bounds what RunVerify reads: a label must fit a tlog-tiles
// entry (64 KiB), so anything far larger is not one.
const maxLabelFile = 1 << 20

// RunVerify is `histor label verify FILE...`: it verifies each file as an
// MTL/1 label and prints one line per file, "ok <path> <id>" or
// "FAIL <path>: <reason>". It returns 0 only if every file verified, 1 if
// any did not, and 2 when given no files.
func RunVerify(paths []string, stdout, stderr io.Writer) int {
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "label verify: no files given")
		return 2
	}
	code := 0
	for _, p := range paths {
		id, err := verifyFile(p)
		if err != nil {
			fmt.Fprintf(stdout, "FAIL %s: %v\n", p, err)
			code = 1
			continue
		}
		fmt.Fprintf(stdout, "ok %s %s\n", p, id)
	}
	return code
}

func verifyFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxLabelFile+1))
	if err != nil {
		return "", fmt.Errorf("reading: %w", err)
	}
	if len(b) > maxLabelFile {
		return "", errors.New("file larger than 1 MiB is not a label")
	}
	v, err := VerifyLabel(b)
	if err != nil {
		return "", err
	}
	return v.ID, nil
}
