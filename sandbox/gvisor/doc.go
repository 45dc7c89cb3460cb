// Package gvisor runs one process in a gVisor sandbox (runsc) without Docker:
// it writes the OCI bundle, starts `runsc run`, bounds the run by a context
// deadline and by memory, CPU and pid limits, and always removes what runsc
// left behind (its state entry and its cgroups), also when a run is killed.
//
// A run is unprivileged and sees a read-only root, a size-bounded tmpfs /tmp
// and the bind mounts the caller names (nosuid, nodev). Without a network
// namespace it has only gVisor's loopback (--network=none); with one, gVisor's
// netstack takes over that namespace's interfaces and nothing else.
//
// When asked, runsc traces chosen syscalls from outside the sandbox into its
// boot log; ParseTrace turns those lines into per-phase records (programs
// started, connections attempted, decoy files opened, persistent writes) that
// the orchestrator maps onto sandbox.Phase.
//
// Two facts about runsc 0.0~20240729 shape this package. Its netstack refuses
// to start in any network namespace on kernels that expose
// /proc/sys/net/core/rmem_default everywhere, so a networked run is started
// from a private mount namespace with a tiny tmpfs over /proc/sys/net/core.
// And the host memory cgroup's OOM killer kills one of the sandbox's host
// processes, after which the sandbox can hang rather than exit: a run watches
// its cgroup's oom_kill counter and kills the sandbox itself.
package gvisor
