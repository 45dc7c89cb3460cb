package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestMembersJoinOnSIGHUP: a newcomer made with `histor keygen --descriptor` joins a running
// federation when the members file of one node names its descriptor and that node gets
// SIGHUP; no node restarts, and the node then holds the newcomer's observations.
func TestMembersJoinOnSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three histor processes with libp2p hosts on loopback; skipped under -short")
	}
	fl := newFleet(t, 6)
	dir := t.TempDir()
	cSeed, cDesc, cListen := filepath.Join(dir, "c.seed"), filepath.Join(dir, "c.descriptor"), tcpAddr(t)
	if r := histor(t, "", "keygen", "--out", cSeed, "--origin", "c.members.example/log", "--descriptor", cDesc, "--p2p-listen", cListen); r.code != 0 {
		t.Fatalf("keygen: exit %d: %s", r.code, r.stderr)
	}
	a := newFedProc(t, "a", "a.members.example/log", "", tcpAddr(t))
	b := newFedProc(t, "b", "b.members.example/log", "", tcpAddr(t))
	c := newFedProc(t, "c", "c.members.example/log", cSeed, cListen)
	members := filepath.Join(dir, "members")
	if err := os.WriteFile(members, []byte("# a's federation\n"+b.descriptor(t)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	aDesc := a.descriptor(t)
	a.extra = []string{"--members", members, "--mirror-poll", "1s"}
	b.extra = []string{"--peer", aDesc, "--mirror-poll", "1s"}
	c.extra = []string{"--peer", aDesc, "--mirror-poll", "1s"}
	var all []string
	for i := range fl.servers {
		all = append(all, fl.id(i))
	}
	for _, p := range []*fedProc{a, b, c} {
		p.registry = fl.reg
		p.start(t)
		p.crawlFleet(t)
	}
	holds(t, 30*time.Second, a, all, b)
	if s, err := seen(t, a, all[0]); err != nil || s[c.did()] != "" {
		t.Fatalf("a counts c before its members file names it: %v %v", s, err)
	}

	if err := os.WriteFile(members, []byte("# a's federation\n"+b.descriptor(t)+"\n"+cDesc+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.signal(t, syscall.SIGHUP)
	took := holds(t, 10*time.Second, a, all, b, c)
	t.Logf("a held the newcomer's observations %v after SIGHUP", took.Round(time.Millisecond))
	if err := a.srv.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("a did not survive SIGHUP: %v", err)
	}
}
