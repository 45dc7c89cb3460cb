package gvisor

import (
	"net/netip"
	"path"
	"slices"
	"strings"
)

// Classifier says what a traced path or connection means. Paths are clean
// and absolute unless the trace could not resolve them.
type Classifier interface {
	// Decoy reports whether opening path reads one of the planted decoys.
	Decoy(path string) bool
	// PersistentWrite reports whether writing path would outlive the
	// sandbox on a real machine.
	PersistentWrite(path string) bool
	// Ignore reports whether a connection is not the package's doing or
	// goes nowhere (loopback, the resolver, the C library's own sockets).
	Ignore(c Connection) bool
}

// Lists is a Classifier made of prefixes, HISTOR's way.
type Lists struct {
	Home         string   // HOME inside the sandbox
	Decoys       []string // prefixes relative to Home
	DecoyFiles   []string // absolute paths, e.g. the working directory's .env
	Persist      []string // prefixes relative to Home
	Scratch      []string // absolute prefixes outside which any write counts as persistent
	QuietSockets []string // unix sockets the C library tries by itself
	Resolvers    []string // "address:port" of the only resolver, never a finding; see WithResolver
}

// WithResolver is l with a (port 53, UDP and TCP) as the run's resolver:
// the name server resolv.conf names, whose lookups the DNS trap records by
// name, so the connections to it are not findings of their own. Each run
// has its own trap address, so this is set per run.
func (l Lists) WithResolver(a netip.Addr) Lists {
	l.Resolvers = append(slices.Clip(l.Resolvers), netip.AddrPortFrom(a.Unmap(), 53).String())
	return l
}

// HISTORLists are HISTOR's DECOYS, PERSIST and quiet sockets for a HOME and
// a working directory.
func HISTORLists(home, work string) Lists {
	return Lists{
		Home: home,
		Decoys: []string{".ssh/", ".aws/", ".npmrc", ".pypirc", ".netrc", ".config/gh/", ".docker/config.json",
			".kube/", ".config/solana/", ".bash_history", ".zsh_history", ".gnupg/", ".env"},
		DecoyFiles: []string{path.Join(work, ".env")},
		Persist: []string{".bashrc", ".bash_profile", ".profile", ".zshrc", ".zprofile", ".ssh/authorized_keys",
			".config/autostart/", "Library/LaunchAgents/", ".config/systemd/user/", ".npmrc", ".gitconfig"},
		Scratch: []string{"/tmp", home, "/work", "/dev/", "/proc/"},
		QuietSockets: []string{"/var/run/nscd/socket", "/run/nscd/socket", "/var/run/dbus/system_bus_socket",
			"/run/systemd/userdb/io.systemd.DynamicUser"},
	}
}

func (l Lists) inHome(p string) (string, bool) {
	return strings.CutPrefix(p, strings.TrimSuffix(l.Home, "/")+"/")
}

func hasPrefix(s string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}

// Decoy implements Classifier.
func (l Lists) Decoy(p string) bool {
	if rel, ok := l.inHome(p); ok && hasPrefix(rel, l.Decoys) {
		return true
	}
	return slices.Contains(l.DecoyFiles, p)
}

// PersistentWrite implements Classifier.
func (l Lists) PersistentWrite(p string) bool {
	if rel, ok := l.inHome(p); ok && hasPrefix(rel, l.Persist) {
		return true
	}
	return !hasPrefix(p, l.Scratch)
}

// Ignore implements Classifier.
func (l Lists) Ignore(c Connection) bool {
	if c.Family == "unix" {
		return c.Address == "" && !c.Unresolved || c.Address == "@" || slices.Contains(l.QuietSockets, c.Address)
	}
	a, err := netip.ParseAddr(c.Address)
	if err != nil {
		return false
	}
	a = a.Unmap()
	if slices.Contains(l.Resolvers, netip.AddrPortFrom(a, uint16(c.Port)).String()) {
		return true
	}
	return a.IsLoopback() || a.IsUnspecified()
}
