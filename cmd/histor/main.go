// Command histor is the one binary of a histor observer: it runs a node, fingerprints tool
// sets, makes keys, verifies labels, audits logs and checks a data directory. See `histor help`.
package main

import (
	"context"
	"os"

	"github.com/histor-observer/histor/cmd/histor/internal/command"
)

func main() {
	os.Exit(command.Main(context.Background(), os.Args, command.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
