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
	sockFDRE = regexp.MustCompile(`^0x([0-9a-f]+) socket:\[\d+\]`)
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
	p.sockets[sockKey{e.pid, fd}] = proto
}

func (p *parser) connection(ph *phaseSets, e event) {
	fm := sockFDRE.FindStringSubmatch(e.args)
	if fm == nil {
		p.reason(ReasonUnparsed)
		return
	}
	fd, _ := strconv.ParseInt(fm[1], 16, 32)
	proto := p.sockets[sockKey{e.pid, int(fd)}]
	if proto == "netlink" {
		return // the kernel's interface and route tables, never a destination
	}
	m := addrRE.FindStringSubmatch(e.args)
	if m == nil {
		if e.call == "connect" || p.namedSend(e) {
			p.reason(ReasonUnresolvedSocket)
			c := Connection{Syscall: e.call, Protocol: proto, Errno: e.errno, Unresolved: true}
			ph.network[c] = true
		}
		return // a send on a connected socket: its connect was recorded
	}
	c := Connection{Syscall: e.call, Family: family(m[1]), Protocol: proto, Errno: e.errno,
		Address: strings.Trim(strings.TrimSpace(m[2]), `"`)}
	c.Port, _ = strconv.Atoi(m[3])
	if c.Family == "unix" {
		c.Protocol = "unix"
		c.Unresolved = !strings.Contains(m[0], "Addr:")
	}
	if c.Unresolved {
		p.reason(ReasonUnresolvedSocket)
	} else if c.Family != "inet" && c.Family != "inet6" && c.Family != "unix" {
		p.reason(ReasonUnparsed)
	}
	if p.c.Ignore(c) {
		return
	}
	ph.network[c] = true
}

// namedSend reports whether a sendmsg/sendmmsg names a destination the
// trace does not print (sendto prints its address).
func (p *parser) namedSend(e event) bool {
	if e.call == "sendto" {
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
			p.reason(ReasonUnparsed)
			return
		}
		name, flags = m[1], m[2]
	} else {
		m := openatRE.FindStringSubmatch(e.args)
		if m == nil {
			p.reason(ReasonUnparsed)
			return
		}
		dir, name, flags = m[1], m[2], m[3]
	}
	if !e.ok() {
		return // a failed open read nothing and wrote nothing
	}
	full, resolved := p.resolve(dir, name)
	if p.c.Decoy(full) || !resolved && p.c.Decoy(path.Join("/", name)) {
		ph.decoys[clip(full, 160)] = true
	}
	if writing(flags) && p.c.PersistentWrite(full) {
		ph.writes[clip(full, 160)] = true
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
func (p *parser) resolve(dir, name string) (string, bool) {
	if strings.HasPrefix(name, "/") {
		return path.Clean(name), true
	}
	if strings.HasPrefix(dir, "/") {
		return path.Join(dir, name), true
	}
	p.reason(ReasonRelativePath)
	return name, false
}

func (p *parser) exec(ph *phaseSets, e event) {
	var dir, name, argv string
	if e.call == "execve" {
		m := execveRE.FindStringSubmatch(e.args)
		if m == nil {
			p.reason(ReasonUnparsed)
			return
		}
		name, argv = m[1], m[2]
	} else {
		m := execveatRE.FindStringSubmatch(e.args)
		if m == nil {
			p.reason(ReasonUnparsed)
			return
		}
		dir, name, argv = m[1], m[2], m[3]
	}
	if !e.ok() || e.pid == 1 {
		return // PID 1's execs are the entry point's own chain
	}
	full, _ := p.resolve(dir, name)
	words := []string{path.Base(full)}
	for i, a := range quotedRE.FindAllStringSubmatch(argv, 6) {
		if i > 0 {
			words = append(words, a[1])
		}
	}
	ph.exec[clip(strings.Join(words, " "), 160)] = true
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
		p.reason(ReasonUnparsed)
		return
	}
	if !e.ok() {
		return
	}
	for _, dn := range paths {
		if full, _ := p.resolve(dn[0], dn[1]); p.c.PersistentWrite(full) {
			ph.writes[clip(full, 160)] = true
		}
	}
}
