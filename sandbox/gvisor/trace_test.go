package gvisor

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// Lines as runsc 0.0~20240729 wrote them for node and python runs.
const sampleTrace = `I1201 22:50:31.216029   15512 main.go:196] **************** gVisor ****************
I1201 22:50:31.393558   15512 strace.go:570] [   1:   1] node E openat(AT_FDCWD /, 0x7ee9c9dca0b1 /etc/ld.so.cache, O_RDONLY|O_CLOEXEC, 0o0)
I1201 22:50:31.393701   15512 strace.go:608] [   1:   1] node X openat(AT_FDCWD /, 0x7ee9c9dca0b1 /etc/ld.so.cache, O_RDONLY|O_CLOEXEC, 0o0) = 3 (0x3) (57.405µs)
I1201 22:50:31.565676   15512 strace.go:608] [   1:   1] node X openat(AT_FDCWD /, 0x7eecbf4f6d28 /home/u/.ssh/id_rsa, O_RDONLY|O_CLOEXEC, 0o0) = 17 (0x11) (85.437µs)
I1201 22:50:31.565900   15512 strace.go:608] [   1:   1] node X openat(AT_FDCWD /, 0x7eecbf4f6d28 /home/u/.aws/credentials, O_RDONLY|O_CLOEXEC, 0o0) = 0 (0x0) errno=2 (no such file or directory) (3.064µs)
I1201 22:50:31.626342   15512 strace.go:605] [   1:   1] node X socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK, 0x0) = 19 (0x13) (27.941µs)
I1201 22:50:31.626494   15512 strace.go:605] [   1:   1] node X connect(0x13 socket:[1], 0x7eecbf4f69f0 {Family: AF_UNIX, error extracting address: address family not supported by protocol}, 0x6e) = 0 (0x0) errno=2 (no such file or directory) (17.175µs)
I1201 22:50:31.813279   15512 strace.go:605] [   8:   8] node X execve(0x7eecbf4f6b60 /usr/local/sbin/true, 0x57ba7e0 ["true"], 0x57c8d50 ["PATH=/usr/bin", "HOME=/nonexistent"]) = 0 (0x0) errno=2 (no such file or directory) (182.66µs)
I1201 22:50:31.820194   15512 strace.go:605] [   8:   8] node X execve(0x7eecbf4f6b60 /usr/bin/true, 0x57ba7e0 ["true", "--x"], 0x57c8d50 ["PATH=/usr/bin", "HOME=/nonexistent"]) = 0 (0x0) (6.559414ms)
I1201 22:50:31.820300   15512 strace.go:605] [   1:   1] node X execve(0x7eecbf4f6b60 /usr/bin/node, 0x57ba7e0 ["node"], 0x57c8d50 []) = 0 (0x0) (6.559414ms)
I1201 22:50:31.939468   15512 strace.go:605] [   1:   1] node X socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK, IPPROTO_IP) = 20 (0x14) (47.511µs)
I1201 22:50:31.939802   15512 strace.go:605] [   1:   1] node X connect(0x14 socket:[8], 0x7eecbf4f7a40 {Family: AF_INET, Addr: 10.1.2.3, Port: 8080}, 0x10) = 0 (0x0) errno=113 (no route to host) (188.9µs)
I1201 22:50:31.962278   15512 strace.go:605] [   1:   1] node X connect(0x14 socket:[9], 0x7eecbf4f7a60 {Family: AF_INET6, Addr: ::1, Port: 443}, 0x1c) = 0 (0x0) errno=115 (operation now in progress) (382.676µs)
I1201 22:50:32.964636   15512 strace.go:605] [   1:   1] node X socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC|SOCK_NONBLOCK, IPPROTO_IP) = 21 (0x15) (27.471µs)
I1201 22:50:32.989174   15512 strace.go:614] [   1:   1] node X sendto(0x15 socket:[2], 0x7eeaba151f70, 0x1, 0x0, 0x7eb9446fb000 {Family: AF_INET, Addr: 10.9.9.9, Port: 53}, 0x10) = 0 (0x0) errno=113 (no route to host) (40.93µs)
I1201 22:50:32.990473   15512 strace.go:605] [   1:   1] node X sendmsg(0x15 socket:[10], 0x7eecbf4f77f0 {name=0x7eecbf4f78f0, namelen=16, iovecs=0x7eecbf4f7988 {base=0x57bd7f8, len=2, "hi"}, control={0x0 }, flags=0}, 0x0) = 0 (0x0) errno=113 (no route to host) (57.505µs)
I1201 22:50:32.990528   25653 strace.go:608] [   1:   1] python3 X openat(AT_FDCWD /home/u, 0x7eeab94c7f20 .bashrc, O_WRONLY|O_CLOEXEC|O_CREAT, 0o777) = 5 (0x5) (24.056µs)
I1201 22:50:32.991347   25653 strace.go:602] [   1:   1] python3 X mkdir(0x7eeab94c6ba0 /opt/dd, 0o777) = 0 (0x0) (21.281µs)
I1201 22:50:32.991459   25653 strace.go:608] [   1:   1] python3 X openat(AT_FDCWD /tmp, 0x7eeab94c6ba0 /tmp/dd/f, O_WRONLY|O_CLOEXEC|O_CREAT|O_TRUNC, 0o666) = 5 (0x5) (22.524µs)
I1201 22:50:32.992130   25653 strace.go:602] [   1:   1] python3 X rename(0x7eeab94c6ba0 /tmp/dd/f, 0x7eeab94c7f20 /home/u/.config/autostart/x.desktop) = 0 (0x0) (60.419µs)
I1201 22:50:32.992415   25653 strace.go:599] [   1:   1] python3 X unlink(0x7eeab94c7f20 /tmp/dd/g) = 0 (0x0) (143.222µs)
I1201 22:50:39.000000   25653 strace.go:599] [   1:   1] python3 X unlink(0x7eeab94c7f20 /tmp/late) = 0 (0x0) (143.222µs)
`

func sampleWindows() []Window {
	at := func(s string) time.Time {
		t, err := time.ParseInLocation("2006-01-02 15:04:05.000", "2026-12-01 "+s, time.UTC)
		if err != nil {
			panic(err)
		}
		return t
	}
	return []Window{{"startup", at("22:50:31.000"), at("22:50:32.500")}, {"calls", at("22:50:32.500"), at("22:50:33.000")}}
}

func TestParseTraceSample(t *testing.T) {
	rep, err := ParseTrace(strings.NewReader(sampleTrace), sampleWindows(), HISTORLists("/home/u", "/work/app"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Phases) != 2 {
		t.Fatalf("phases = %d", len(rep.Phases))
	}
	st, calls := rep.Phases[0], rep.Phases[1]
	if !slices.Equal(st.Exec, []string{"true --x"}) {
		t.Errorf("startup exec = %q", st.Exec)
	}
	if !slices.Equal(st.Decoys, []string{"/home/u/.ssh/id_rsa"}) {
		t.Errorf("startup decoys = %q (a failed open is no read)", st.Decoys)
	}
	wantNet := []Connection{
		{Syscall: "connect", Family: "inet", Protocol: "tcp", Address: "10.1.2.3", Port: 8080, Errno: 113},
		{Syscall: "connect", Protocol: "unix", Family: "unix", Errno: 2, Unresolved: true},
	}
	if !slices.Equal(st.Network, wantNet) {
		t.Errorf("startup network = %+v\nwant %+v", st.Network, wantNet)
	}
	wantCalls := []Connection{
		{Syscall: "sendto", Family: "inet", Protocol: "udp", Address: "10.9.9.9", Port: 53, Errno: 113},
		{Syscall: "sendmsg", Protocol: "udp", Errno: 113, Unresolved: true},
	}
	if !slices.Equal(calls.Network, wantCalls) {
		t.Errorf("calls network = %+v\nwant %+v", calls.Network, wantCalls)
	}
	wantWrites := []string{"/home/u/.bashrc", "/home/u/.config/autostart/x.desktop", "/opt/dd"}
	if !slices.Equal(calls.Writes, wantWrites) {
		t.Errorf("calls writes = %q, want %q", calls.Writes, wantWrites)
	}
	wantReasons := []string{ReasonUnresolvedSocket, ReasonUnattributed}
	if !slices.Equal(rep.Reasons, wantReasons) {
		t.Errorf("reasons = %q, want %q", rep.Reasons, wantReasons)
	}
}

func TestParseTraceReasons(t *testing.T) {
	w := sampleWindows()
	l := HISTORLists("/home/u", "/work")
	for _, tc := range []struct {
		name, log string
		want      []string
	}{
		{"empty", "", []string{ReasonTraceEmpty}},
		{"unparsed open", "I1201 22:50:31.393701   1 strace.go:608] [   2:   2] x X openat(garbage) = 3 (0x3) (1µs)\n",
			[]string{ReasonUnparsed}},
		{"relative", "I1201 22:50:31.393701   1 strace.go:608] [   2:   2] x X openat(0x5 , 0x1 a/b, O_RDONLY, 0o0) = 3 (0x3) (1µs)\n",
			[]string{ReasonRelativePath}},
		{"truncated argument", "I1201 22:50:31.393701   1 strace.go:608] [   2:   2] x X execve(0x1 /bin/sh, 0x2 [\"sh\", \"aaaa\"...], 0x3 []) = 0 (0x0) (1µs)\n",
			[]string{ReasonTruncated}},
	} {
		rep, err := ParseTrace(strings.NewReader(tc.log), w, l, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rep.Reasons, tc.want) {
			t.Errorf("%s: reasons %q, want %q", tc.name, rep.Reasons, tc.want)
		}
	}
}

func TestParseTraceBounded(t *testing.T) {
	var b strings.Builder
	for i := range MaxList + 5 {
		b.WriteString("I1201 22:50:31.393701   1 strace.go:608] [   2:   2] x X execve(0x1 /bin/p")
		b.WriteString(strings.Repeat("x", i))
		b.WriteString(", 0x2 [\"p\"], 0x3 []) = 0 (0x0) (1µs)\n")
	}
	rep, err := ParseTrace(strings.NewReader(b.String()), sampleWindows(), HISTORLists("/h", "/w"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Phases[0]; len(p.Exec) != MaxList || !p.Truncated || !slices.Contains(rep.Reasons, ReasonTruncated) {
		t.Errorf("exec %d, truncated %v, reasons %q", len(p.Exec), p.Truncated, rep.Reasons)
	}
}

func TestReadTraceMissing(t *testing.T) {
	rep, err := ReadTrace(t.TempDir(), sampleWindows(), HISTORLists("/h", "/w"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Reasons, []string{ReasonTraceMissing}) {
		t.Errorf("reasons %q", rep.Reasons)
	}
}

// Lines runsc 0.0~20240729 wrote for node's getaddrinfo and connects in a
// trap network whose resolver is 10.231.0.1 (socket ids as it numbered them).
const (
	lineUnixSocket = `I1201 22:50:31.100000   1 strace.go:605] [   1:   8] libuv-worker X socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK, 0x0) = 18 (0x12) (31.376µs)` + "\n"
	lineUnixNoAddr = `I1201 22:50:31.100001   1 strace.go:605] [   1:   8] libuv-worker X connect(0x12 socket:[1], 0x7ea3937fcd10 {Family: AF_UNIX, error extracting address: address family not supported by protocol}, 0x6e) = 0 (0x0) errno=2 (no such file or directory) (66.789µs)` + "\n"
	lineUnixQuiet  = `I1201 22:50:31.100001   1 strace.go:605] [   1:   8] libuv-worker X connect(0x12 socket:[1], 0x7ea3937fcd10 {Family: AF_UNIX, Addr: "/var/run/nscd/socket"}, 0x6e) = 0 (0x0) errno=2 (no such file or directory) (66.789µs)` + "\n"
	lineUnixOther  = `I1201 22:50:31.100001   1 strace.go:605] [   1:   8] libuv-worker X connect(0x12 socket:[1], 0x7ea3937fcd10 {Family: AF_UNIX, Addr: "/run/docker.sock"}, 0x6e) = 0 (0x0) errno=2 (no such file or directory) (66.789µs)` + "\n"
	lineUDPSocket  = `I1201 22:50:31.200000   1 strace.go:605] [   1:   8] libuv-worker X socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC|SOCK_NONBLOCK, IPPROTO_IP) = 18 (0x12) (16.514µs)` + "\n"
	lineResolver   = `I1201 22:50:31.200001   1 strace.go:605] [   1:   8] libuv-worker X connect(0x12 socket:[3], 0x7ea3937fed8c {Family: AF_INET, Addr: 10.231.0.1, Port: 53}, 0x10) = 0 (0x0) (46.378µs)` + "\n"
	lineOtherUDP   = `I1201 22:50:31.200001   1 strace.go:605] [   1:   8] libuv-worker X connect(0x12 socket:[3], 0x7ea3937fed8c {Family: AF_INET, Addr: 10.9.9.9, Port: 5353}, 0x10) = 0 (0x0) (46.378µs)` + "\n"
	lineSendmmsg   = `I1201 22:50:31.200002   1 strace.go:608] [   1:   8] libuv-worker X sendmmsg(0x12 socket:[3], 0x7ea392ffa940, 0x2, 0x4000) = 2 (0x2) (59.108µs)` + "\n"
	lineSendtoNull = `I1201 22:50:31.200002   1 strace.go:614] [   1:   8] libuv-worker X sendto(0x12 socket:[3], 0x7ea3937fbd60, 0x8f, 0x4000, null, 0x0) = 143 (0x8f) (229.419µs)` + "\n"
	lineSendmsg0   = `I1201 22:50:31.200002   1 strace.go:605] [   1:   8] libuv-worker X sendmsg(0x12 socket:[3], 0x7eecbf4f77f0 {name=0x0, namelen=0, iovecs=0x7eecbf4f7988 {base=0x57bd7f8, len=2, "hi"}, control={0x0 }, flags=0}, 0x0) = 2 (0x2) (57.505µs)` + "\n"
	lineSendmsg16  = `I1201 22:50:31.200002   1 strace.go:605] [   1:   8] libuv-worker X sendmsg(0x12 socket:[3], 0x7eecbf4f77f0 {name=0x7eecbf4f78f0, namelen=16, iovecs=0x7eecbf4f7988 {base=0x57bd7f8, len=2, "hi"}, control={0x0 }, flags=0}, 0x0) = 2 (0x2) (57.505µs)` + "\n"
	lineTCPSocket  = `I1201 22:50:31.300000   1 strace.go:605] [   1:   1] node X socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK, IPPROTO_IP) = 18 (0x12) (48.062µs)` + "\n"
	lineTCPTrap    = `I1201 22:50:31.300001   1 strace.go:605] [   1:   1] node X connect(0x12 socket:[5], 0x7ea962b21600 {Family: AF_INET, Addr: 10.231.0.1, Port: 80}, 0x10) = 0 (0x0) errno=115 (operation now in progress) (194.668µs)` + "\n"
	lineTCPSend    = `I1201 22:50:32.600000   1 strace.go:605] [   1:   1] node X sendmsg(0x12 socket:[5], 0x7eecbf4f77f0 {name=0x7eecbf4f78f0, namelen=16, iovecs=0x7eecbf4f7988 {base=0x57bd7f8, len=2, "hi"}, control={0x0 }, flags=0}, 0x0) = 2 (0x2) (57.505µs)` + "\n"
)

// TestParseTraceAttribution checks which connects and sends the parser can
// attribute: the resolver's own traffic is ignored, a send on a connected
// socket goes to its peer where that is certain, and what it cannot show
// (an AF_UNIX address this runsc never prints, a datagram send naming a
// destination it does not print) stays recorded and makes its phase, and
// only its phase, incomplete.
func TestParseTraceAttribution(t *testing.T) {
	trapHTTP := Connection{Syscall: "connect", Family: "inet", Protocol: "tcp", Address: "10.231.0.1", Port: 80, Errno: 115}
	other := Connection{Syscall: "connect", Family: "inet", Protocol: "udp", Address: "10.9.9.9", Port: 5353}
	for _, tc := range []struct {
		name    string
		log     string
		network []Connection // startup's
		reasons []string     // startup's
	}{
		{"resolver lookup by sendmmsg", lineUDPSocket + lineResolver + lineSendmmsg, nil, nil},
		{"resolver lookup by sendto", lineUDPSocket + lineResolver + lineSendtoNull, nil, nil},
		{"resolver, unnamed sendmsg", lineUDPSocket + lineResolver + lineSendmsg0, nil, nil},
		{"resolver socket, named sendmsg", lineUDPSocket + lineResolver + lineSendmsg16,
			[]Connection{{Syscall: "sendmsg", Protocol: "udp", Unresolved: true}}, []string{ReasonUnresolvedSocket}},
		{"unconnected datagram sendmmsg", lineUDPSocket + lineSendmmsg,
			[]Connection{{Syscall: "sendmmsg", Protocol: "udp", Unresolved: true}}, []string{ReasonUnresolvedSocket}},
		{"other peer, sendmmsg", lineUDPSocket + lineOtherUDP + lineSendmmsg,
			[]Connection{other, {Syscall: "sendmmsg", Protocol: "udp", Unresolved: true}}, []string{ReasonUnresolvedSocket}},
		{"other peer, sendto", lineUDPSocket + lineOtherUDP + lineSendtoNull,
			[]Connection{other}, nil}, // the same destination, once
		{"unix address not shown", lineUnixSocket + lineUnixNoAddr,
			[]Connection{{Syscall: "connect", Family: "unix", Protocol: "unix", Errno: 2, Unresolved: true}}, []string{ReasonUnresolvedSocket}},
		{"unix quiet socket shown", lineUnixSocket + lineUnixQuiet, nil, nil},
		{"unix other socket shown", lineUnixSocket + lineUnixOther,
			[]Connection{{Syscall: "connect", Family: "unix", Protocol: "unix", Address: "/run/docker.sock", Errno: 2}}, nil},
		{"tcp to the trap", lineTCPSocket + lineTCPTrap, []Connection{trapHTTP}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := HISTORLists("/home/u", "/work").WithResolver(netip.MustParseAddr("10.231.0.1"))
			rep, err := ParseTrace(strings.NewReader(tc.log), sampleWindows(), l, time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			st := rep.Phases[0]
			if !slices.Equal(st.Network, tc.network) {
				t.Errorf("network %+v\nwant %+v", st.Network, tc.network)
			}
			if !slices.Equal(st.Reasons, tc.reasons) {
				t.Errorf("startup reasons %q, want %q", st.Reasons, tc.reasons)
			}
			if c := rep.Phases[1]; len(c.Reasons) != 0 || len(c.Network) != 0 {
				t.Errorf("calls phase got %+v, reasons %q, from startup's lines", c.Network, c.Reasons)
			}
		})
	}
	// A send in a later phase on a stream socket connected earlier goes to
	// that peer, recorded in the later phase too.
	rep, err := ParseTrace(strings.NewReader(lineTCPSocket+lineTCPTrap+lineTCPSend), sampleWindows(), HISTORLists("/h", "/w"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Phases[1].Network; len(got) != 1 || got[0].Address != "10.231.0.1" || got[0].Port != 80 || len(rep.Reasons) != 0 {
		t.Errorf("calls network %+v, reasons %q", got, rep.Reasons)
	}
	// Without the resolver set, its lookups are destinations like any other.
	rep, err = ParseTrace(strings.NewReader(lineUDPSocket+lineResolver+lineSendmmsg), sampleWindows(), HISTORLists("/h", "/w"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Phases[0].Network) == 0 {
		t.Error("the resolver's connect ignored without WithResolver")
	}
}

// TestParseTraceMemoryBounded: a trace of many thousand distinct programs
// keeps at most maxTracked of them while it is read, and says it was cut.
func TestParseTraceMemoryBounded(t *testing.T) {
	var b strings.Builder
	for i := range 5 * maxTracked {
		fmt.Fprintf(&b, "I1201 22:50:31.393701   1 strace.go:608] [   2:   2] x X execve(0x1 /bin/p%d, 0x2 [\"p\"], 0x3 []) = 0 (0x0) (1µs)\n", i)
	}
	p := newParser(sampleWindows(), HISTORLists("/h", "/w"), time.UTC)
	if err := p.read(strings.NewReader(b.String())); err != nil {
		t.Fatal(err)
	}
	if n := len(p.phases[0].exec); n > maxTracked {
		t.Fatalf("kept %d programs while reading, bound %d", n, maxTracked)
	}
	if !p.phases[0].reasons[ReasonTruncated] {
		t.Error("the phase does not say it was cut")
	}
}
