package command

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed moves the leaf command's flags ahead of its positional arguments, so that
// "histor audit BASE --state FILE" means what it says: urfave/cli v2 stops reading flags at
// the first positional argument. Arguments after "--" stay positional.
func interspersed(app *cli.App, args []string) []string {
	if len(args) == 0 {
		return args
	}
	out := []string{args[0]}
	i := 1
	for i < len(args) && isFlag(args[i]) { // global flags
		i += flagWidth(app.Flags, args, i)
	}
	out = append(out, args[1:min(i, len(args))]...)
	leaf := findLeaf(app.Commands, args, &i, &out)
	if leaf == nil || i >= len(args) {
		return append(out, args[min(i, len(args)):]...)
	}
	var flags, positional []string
	for i < len(args) {
		switch {
		case args[i] == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case isFlag(args[i]):
			w := flagWidth(leaf.Flags, args, i)
			flags = append(flags, args[i:min(i+w, len(args))]...)
			i += w
		default:
			positional = append(positional, args[i])
			i++
		}
	}
	out = append(out, flags...)
	if len(positional) > 0 {
		out = append(out, "--")
	}
	return append(out, positional...)
}

// findLeaf walks command names from args[*i], appending them to out, and returns the command
// reached if it runs itself: no subcommands, or an action of its own for arguments that name
// none of them ("histor sandbox SPEC --json" beside "histor sandbox worker").
func findLeaf(cmds []*cli.Command, args []string, i *int, out *[]string) *cli.Command {
	var leaf *cli.Command
	for *i < len(args) {
		c := lookupCommand(cmds, args[*i])
		if c == nil {
			break
		}
		*out = append(*out, args[*i])
		*i++
		leaf, cmds = c, c.Subcommands
	}
	if leaf == nil || (len(leaf.Subcommands) > 0 && leaf.Action == nil) {
		return nil
	}
	return leaf
}

func lookupCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func isFlag(a string) bool { return len(a) > 1 && strings.HasPrefix(a, "-") && a != "--" }

// flagWidth is how many arguments the flag at args[i] spans: 2 when it takes a value that is
// not joined to it with "=", else 1 (booleans, --help, unknown flags).
func flagWidth(flags []cli.Flag, args []string, i int) int {
	name := strings.TrimLeft(args[i], "-")
	if strings.Contains(name, "=") {
		return 1
	}
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			if v, ok := f.(cli.DocGenerationFlag); ok && v.TakesValue() {
				return 2
			}
			return 1
		}
	}
	return 1
}
