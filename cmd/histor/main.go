// Command histor is the one binary of a histor observer: it runs a node, fingerprints tool
// sets, makes keys, verifies labels, audits logs and checks a data directory. See `histor help`.
package main

import (
	"context"
	"os"

	"github.com/histor-observer/histor/cmd/histor/internal/command"
	"github.com/histor-observer/histor/log/cmalloc"
)

func main() {
	// The log's block cache lives in C memory under cgo, and the allocator's
	// settings are the process's, so the program sets them; see log/cmalloc.
	cmalloc.Tune(cmalloc.DefaultMmapThreshold, cmalloc.DefaultMaxMmaps)
	os.Exit(command.Main(context.Background(), os.Args, command.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
