// Package sandbox observes MCP server packages (npm and PyPI) by running them
// in gVisor where nothing they do reaches anything real, and writes what
// happened as one Observation (histor.package-observation/v1, HISTOR's shape,
// extended with the runtime, the root image and the limits).
//
// One observation is a pipeline of stages, each a status on failure, never a
// crash:
//
//	resolve   sandbox/pkgs: version, artifact, integrity, version facts
//	install   sandbox/pkgs: npm --ignore-scripts / wheels only, on the host,
//	          the only stage that reaches a registry
//	scripts   install scripts, traced, inside the sandbox (sandbox/gvisor)
//	run       the server under runsc (sandbox/gvisor) in a network namespace
//	          whose only peers are histor's traps (sandbox/trap), with decoys
//	          in HOME and placeholders in the environment (sandbox/trap)
//	talk      MCP over stdio (sandbox/stdio): initialize, tools/list, up to
//	          15 canary calls
//
// The root filesystems come from Debian packages (sandbox/rootfs), named by
// digest. Jobs reach workers through a NATS JetStream work queue
// (sandbox/queue); only the node signs labels from what comes back.
package sandbox
