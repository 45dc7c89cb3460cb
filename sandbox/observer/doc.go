// Package observer joins the sandbox's stages into one observation of one
// package version: resolve and install on the host (sandbox/pkgs), the
// install scripts traced inside gVisor in a trap network of their own, the
// server under runsc (sandbox/gvisor) on a Debian root (sandbox/rootfs) in a
// network whose only peers are the traps (sandbox/trap), MCP over its stdio
// (sandbox/stdio), then the records of what it did split into phases.
//
// Observe always returns an Observation with a status: whatever the package
// does ends as a status and a record, and an error means only that the
// caller misused the Observer. Everything a run makes (the sandbox, its trap
// network, its work directory) is removed on every path out of Observe.
//
// It lives beside the stages rather than in package sandbox because the
// stages import sandbox for the Observation's types.
package observer
