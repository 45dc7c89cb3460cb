// Package pebblelog is the Pebble logger the stores that keep no log of Pebble's own use.
package pebblelog

import "fmt"

// Quiet keeps Pebble's informational chatter out of the node's logs and turns a fatal
// error into a panic naming it: Pebble expects Fatalf never to return, and a panic stops
// the goroutine that met the damage instead of exiting the whole process unlogged.
type Quiet struct{}

func (Quiet) Infof(string, ...any) {}

func (Quiet) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}
