//go:build !race

package raceflag

// Enabled is false: this binary was built without -race.
const Enabled = false
