// Package trap gives one sandboxed run a network whose only peers are
// histor's traps, and the decoys and placeholders whose reappearance in
// that network (or in a tool's answer) shows what a package took.
//
// A Pool (one per worker process) owns the trap CA and the address pool.
// Each run opens a Network: two network namespaces joined by a veth pair,
// a /30 of the pool between them. The sandbox side has a default route via
// the trap side and nothing else; the trap side has no route onward, IP
// forwarding off and no IPv6. In the trap namespace every TCP connection, to
// any address and port, is redirected (iptables REDIRECT, original
// destination from SO_ORIGINAL_DST) to one listener that speaks HTTP, HTTPS,
// SMTP or nothing depending on the original port and the first bytes, and
// UDP 53 reaches a DNS trap that answers every A query with the trap
// address. The traps answer with synthetic success and forward nothing,
// ever: there is no code here that opens a connection outwards.
//
// Every trap writes a Record with a timestamp, so the caller splits them
// into phases and maps them onto sandbox.NetworkAttempt. Canary values
// (decoy files, environment placeholders) all carry "histor-canary-<tag>",
// and FindCanaries names the ones it sees.
package trap
