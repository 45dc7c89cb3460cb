package gvisor

import (
	"path"
	"regexp"
	"strconv"
	"strings"
)

// event is one syscall exit line.
type event struct {
	pid   int
	call  string
	args  string
	ret   string
	errno int
}

func (e event) ok() bool { return e.errno == 0 }

// The argument shapes runsc's strace prints (release 20240729).
var (
	// open: 0xADDR PATH, FLAGS, 0oMODE
	openRE = regexp.MustCompile(`^0x[0-9a-f]+ (.*), ((?:O_[A-Z_]+|0x[0-9a-f]+)(?:\|(?:O_[A-Z_]+|0x[0-9a-f]+))*), 0o[0-7]+$`)
	// openat: DIRFD DIR, 0xADDR PATH, FLAGS, 0oMODE (DIRFD is AT_FDCWD or 0xN)
	openatRE = regexp.MustCompile(`^(?:AT_FDCWD|0x[0-9a-f]+) ?(.*?), 0x[0-9a-f]+ (.*), ((?:O_[A-Z_]+|0x[0-9a-f]+)(?:\|(?:O_[A-Z_]+|0x[0-9a-f]+))*), 0o[0-7]+$`)
	// mkdirat: DIRFD DIR, 0xADDR PATH, 0oMODE; unlinkat: DIRFD DIR, 0xADDR PATH, FLAGS
	atPathRE = regexp.MustCompile(`^(?:AT_FDCWD|0x[0-9a-f]+) ?(.*?), 0x[0-9a-f]+ (.*), (?:0o[0-7]+|0x[0-9a-f]+|AT_REMOVEDIR)$`)
	// renameat: DIRFD DIR, 0xADDR OLD, DIRFD DIR, 0xADDR NEW
	renameatRE = regexp.MustCompile(`^(?:AT_FDCWD|0x[0-9a-f]+) ?(.*?), 0x[0-9a-f]+ (.*?), (?:AT_FDCWD|0x[0-9a-f]+) ?(.*?), 0x[0-9a-f]+ (.*)$`)
	// rename: 0xADDR OLD, 0xADDR NEW
	renameRE = regexp.MustCompile(`^0x[0-9a-f]+ (.*?), 0x[0-9a-f]+ (.*)$`)
	// execve: 0xADDR PATH, 0xADDR ["argv0", ...], 0xADDR [env...]
	execveRE = regexp.MustCompile(`^0x[0-9a-f]+ (.*?), 0x[0-9a-f]+ \[(.*?)\], 0x[0-9a-f]+ \[`)
	// execveat: DIRFD DIR, 0xADDR PATH, 0xADDR [argv], ...
	execveatRE = regexp.MustCompile(`^(?:AT_FDCWD|0x[0-9a-f]+) ?(.*?), 0x[0-9a-f]+ (.*?), 0x[0-9a-f]+ \[(.*?)\], 0x[0-9a-f]+ \[`)
	quotedRE   = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
	// socket: AF_X, SOCK_Y|FLAGS, PROTO
	socketRE = regexp.MustCompile(`^(AF_\w+), (SOCK_\w+)`)
	// the socket argument of connect/send*: 0xFD socket:[N]
	sockFDRE = regexp.MustCompile(`^0x([0-9a-f]+) (socket:\[\d+\])`)
	addrRE   = regexp.MustCompile(`\{Family: (AF_\w+), (?:Addr: ([^,}]*)(?:, Port: (\d+))?|error extracting address[^}]*)\}`)
	// sendmsg/sendmmsg: {name=0x..., namelen=N, ...
	namelenRE = regexp.MustCompile(`namelen=(\d+)`)
)

// writeFlags are the open flags that make an open a write.
var writeFlags = []string{"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"}

func (p *parser) event(ph *phaseSets, e event) {
	switch e.call {
	case "socket":
		p.socket(e)
	case "connect", "sendto", "sendmsg", "sendmmsg":
		p.connection(ph, e)
	case "open", "openat":
		p.open(ph, e)
	case "execve", "execveat":
		p.exec(ph, e)
	case "mkdir", "mkdirat", "unlink", "unlinkat", "rename", "renameat", "renameat2":
		p.change(ph, e)
	}
}

func (p *parser) socket(e event) {
	m := socketRE.FindStringSubmatch(e.args)
	fd, err := strconv.Atoi(strings.Fields(e.ret + " x")[0])
	if m == nil || err != nil || !e.ok() {
		return
	}
	proto := map[string]string{"SOCK_STREAM": "tcp", "SOCK_DGRAM": "udp"}[m[2]]
	switch m[1] {
	case "AF_UNIX":
		proto = "unix"
	case "AF_NETLINK":
		proto = "netlink"
	}
	if len(p.sockets) < maxTracked*64 {
		p.sockets[sockKey{e.pid, fd}] = proto
	} else {
		p.reason(ReasonTruncated)
	}
}

func (p *parser) connection(ph *phaseSets, e event) {
	fm := sockFDRE.FindStringSubmatch(e.args)
	if fm == nil {
		p.phaseReason(ph, ReasonUnparsed)
		return
	}
	fd, _ := strconv.ParseInt(fm[1], 16, 32)
	proto := p.sockets[sockKey{e.pid, int(fd)}]
	if proto == "netlink" {
		return // the kernel's interface and route tables, never a destination
	}
	m := addrRE.FindStringSubmatch(e.args)
	if m == nil {
		p.unaddressed(ph, e, proto, fm[2])
		return
	}
	c := Connection{Syscall: e.call, Family: family(m[1]), Protocol: proto, Errno: e.errno,
		Address: strings.Trim(strings.TrimSpace(m[2]), `"`)}
	c.Port, _ = strconv.Atoi(m[3])
	if c.Family == "unix" {
		c.Protocol = "unix"
		c.Unresolved = !strings.Contains(m[0], "Addr:")
	}
	if e.call == "connect" && (e.ok() || e.errno == errInProgress) && len(p.peers) < maxTracked*64 {
		p.peers[fm[2]] = c
	}
	p.record(ph, c)
}

// errInProgress is EINPROGRESS: a non-blocking connect under way, whose
// socket is as good as connected for what it sends next.
const errInProgress = 115

// record keeps c in ph unless the classifier ignores it; a destination the
// trace could not show, or a family it does not know, makes ph incomplete.
func (p *parser) record(ph *phaseSets, c Connection) {
	if c.Unresolved {
		p.phaseReason(ph, ReasonUnresolvedSocket)
	} else if c.Family != "inet" && c.Family != "inet6" && c.Family != "unix" {
		p.phaseReason(ph, ReasonUnparsed)
	}
	if !c.Unresolved && p.c.Ignore(c) {
		return
	}
	if len(ph.network) < maxTracked || ph.network[c] {
		ph.network[c] = true
	} else {
		p.phaseReason(ph, ReasonTruncated)
	}
}

// unaddressed handles a connect or send whose destination the trace did not
// print. A connect's destination is then unknown. A send goes to its
// socket's connected peer, where that is certain: always on a stream
// socket (its peer is fixed), and on a datagram socket only when the send
// names no destination. This runsc prints neither sendmmsg's messages nor
// their names, so a sendmmsg on a datagram socket is taken to go to its
// peer only when that peer is the resolver (the C library's own lookup,
// which connects and then sends its questions that way); anywhere else
// it is unresolved. A send without a name on a socket whose connect the
// trace never showed (an accepted connection, a socketpair) reaches only
// something inside the sandbox and is not recorded.
func (p *parser) unaddressed(ph *phaseSets, e event, proto, sock string) {
	unresolved := Connection{Syscall: e.call, Protocol: proto, Errno: e.errno, Unresolved: true}
	if e.call == "connect" {
		p.record(ph, unresolved)
		return
	}
	named := p.namedSend(e)
	peer, connected := p.peers[sock]
	switch {
	case connected && proto != "udp":
		p.record(ph, peer)
	case connected && e.call == "sendmmsg" && !peer.Unresolved && p.c.Ignore(peer):
		p.record(ph, peer)
	case connected && e.call != "sendmmsg" && !named:
		p.record(ph, peer)
	case named || proto == "udp" && e.call == "sendmmsg":
		p.record(ph, unresolved)
	}
}

// namedSend reports whether a sendmsg names a destination the trace does
// not print (sendto prints its address; sendmmsg prints no names at all).
func (p *parser) namedSend(e event) bool {
	if e.call != "sendmsg" {
		return false
	}
	m := namelenRE.FindStringSubmatch(e.args)
	return m != nil && m[1] != "0"
}

func family(af string) string {
	switch af {
	case "AF_INET":
		return "inet"
	case "AF_INET6":
		return "inet6"
	case "AF_UNIX":
		return "unix"
	}
	return strings.ToLower(strings.TrimPrefix(af, "AF_"))
}

func (p *parser) open(ph *phaseSets, e event) {
	var dir, name, flags string
	if e.call == "open" {
		m := openRE.FindStringSubmatch(e.args)
		if m == nil {
			p.phaseReason(ph, ReasonUnparsed)
			return
		}
		name, flags = m[1], m[2]
	} else {
		m := openatRE.FindStringSubmatch(e.args)
		if m == nil {
			p.phaseReason(ph, ReasonUnparsed)
			return
		}
		dir, name, flags = m[1], m[2], m[3]
	}
	if !e.ok() {
		return // a failed open read nothing and wrote nothing
	}
	full, resolved := p.resolve(ph, dir, name)
	if p.c.Decoy(full) || !resolved && p.c.Decoy(path.Join("/", name)) {
		addBounded(p, ph, ph.decoys, clip(full, 160))
	}
	if writing(flags) && p.c.PersistentWrite(full) {
		addBounded(p, ph, ph.writes, clip(full, 160))
	}
}

func writing(flags string) bool {
	for _, f := range strings.Split(flags, "|") {
		for _, w := range writeFlags {
			if f == w {
				return true
			}
		}
	}
	return false
}

// resolve joins a relative path to the directory runsc printed beside its
// dirfd. Without one, the path stays as given and the trace is incomplete.
func (p *parser) resolve(ph *phaseSets, dir, name string) (string, bool) {
	if strings.HasPrefix(name, "/") {
		return path.Clean(name), true
	}
	if strings.HasPrefix(dir, "/") {
		return path.Join(dir, name), true
	}
	p.phaseReason(ph, ReasonRelativePath)
	return name, false
}

func (p *parser) exec(ph *phaseSets, e event) {
	var dir, name, argv string
	if e.call == "execve" {
		m := execveRE.FindStringSubmatch(e.args)
		if m == nil {
			p.phaseReason(ph, ReasonUnparsed)
			return
		}
		name, argv = m[1], m[2]
	} else {
		m := execveatRE.FindStringSubmatch(e.args)
		if m == nil {
			p.phaseReason(ph, ReasonUnparsed)
			return
		}
		dir, name, argv = m[1], m[2], m[3]
	}
	if !e.ok() || e.pid == 1 {
		return // PID 1's execs are the entry point's own chain
	}
	full, _ := p.resolve(ph, dir, name)
	words := []string{path.Base(full)}
	for i, a := range quotedRE.FindAllStringSubmatch(argv, 6) {
		if i > 0 {
			words = append(words, a[1])
		}
	}
	addBounded(p, ph, ph.exec, clip(strings.Join(words, " "), 160))
}

// change records a directory made, a file removed or renamed, as a write.
func (p *parser) change(ph *phaseSets, e event) {
	var paths [][2]string
	switch e.call {
	case "mkdir", "unlink":
		if i := strings.Index(e.args, " "); strings.HasPrefix(e.args, "0x") && i > 0 {
			name := e.args[i+1:]
			if j := strings.LastIndex(name, ", "); e.call == "mkdir" && j >= 0 {
				name = name[:j]
			}
			paths = append(paths, [2]string{"", name})
		}
	case "mkdirat", "unlinkat":
		if m := atPathRE.FindStringSubmatch(e.args); m != nil {
			paths = append(paths, [2]string{m[1], m[2]})
		}
	case "rename":
		if m := renameRE.FindStringSubmatch(e.args); m != nil {
			paths = append(paths, [2]string{"", m[1]}, [2]string{"", m[2]})
		}
	case "renameat", "renameat2":
		if m := renameatRE.FindStringSubmatch(e.args); m != nil {
			paths = append(paths, [2]string{m[1], m[2]}, [2]string{m[3], m[4]})
		}
	}
	if len(paths) == 0 {
		p.phaseReason(ph, ReasonUnparsed)
		return
	}
	if !e.ok() {
		return
	}
	for _, dn := range paths {
		if full, _ := p.resolve(ph, dn[0], dn[1]); p.c.PersistentWrite(full) {
			addBounded(p, ph, ph.writes, clip(full, 160))
		}
	}
}

// maxTracked bounds the distinct records one phase keeps while the trace is
// read (the lists handed out keep MaxList of them): a package that opens
// millions of distinct paths must not grow the worker's memory, which is
// outside the sandbox's limit. Past it the phase is truncated.
const maxTracked = 1024

// addBounded adds k to set unless the set is full, which truncates ph.
func addBounded(p *parser, ph *phaseSets, set map[string]bool, k string) {
	if len(set) < maxTracked || set[k] {
		set[k] = true
		return
	}
	p.phaseReason(ph, ReasonTruncated)
}
