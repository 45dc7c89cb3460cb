//go:build race

package raceflag

// Enabled is true: this binary was built with -race.
const Enabled = true
