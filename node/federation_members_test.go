package node

import (
	"fmt"
	"github.com/histor-observer/histor/internal/promset/promtest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReloadMembers grows and shrinks a running federation through its members file, as
// SIGHUP does for histor serve: a peer added is dialled, its log mirrored and witnessed, its
// witness sent this log's checkpoints; a file that does not parse changes nothing; a peer
// removed is dropped.
func TestReloadMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nodes and libp2p hosts on loopback")
	}
	a, b, c := newFedNode(t, "a", "a", true), newFedNode(t, "b", "b", true), newFedNode(t, "c", "c", true)
	dir := t.TempDir()
	members := filepath.Join(dir, "members")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(members, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// c's descriptor sits beside the file, named by a relative path.
	if err := os.Rename(c.descriptorFile(t), filepath.Join(dir, "c.descriptor")); err != nil {
		t.Fatal(err)
	}
	write("# the federation\n" + b.descriptorFile(t) + "\n")
	a.start(t, Config{MembersFile: members})
	b.start(t, Config{Peers: []string{a.descriptorFile(t)}})
	c.start(t, Config{Peers: []string{a.descriptorFile(t)}})
	waitConnected(t, []*fedNode{a, b})
	c.appendLabel(t)
	if a.node.fed.Gossip().Heads()[c.did()] != nil {
		t.Fatal("a counts c before its members file names it")
	}

	write("# the federation\n" + b.descriptorFile(t) + "\nc.descriptor   # beside this file\n")
	if err := a.node.ReloadMembers(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a mirrors c", func() error {
		if m := a.node.fed.Mirror(); m.Size(c.did()) != c.node.Log().Size() {
			return fmt.Errorf("mirror of c at %d, c's log at %d", m.Size(c.did()), c.node.Log().Size())
		}
		return nil
	})
	cosignedBy(t, c, a) // a's witness took c's log
	a.appendLabel(t)
	cosignedBy(t, a, b, c) // a's new submitter reaches c's witness

	write("did:key:nonsense\n")
	if err := a.node.ReloadMembers(); err == nil {
		t.Fatal("a members file that does not parse was taken")
	}
	if got := fedSeries(t, a, "histor_federation_member_reloads_total", "refused"); got != 1 {
		t.Errorf("refused reloads %v, want 1", got)
	}
	if !slices.Contains(a.node.fed.Gossip().Connected(), c.did()) {
		t.Fatal("a refused file changed the members")
	}

	write("c.descriptor\n")
	if err := a.node.ReloadMembers(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b dropped", func() error {
		if slices.Contains(a.node.fed.Gossip().Connected(), b.did()) {
			return fmt.Errorf("a is still connected to b")
		}
		return nil
	})
	if got := fedSeries(t, a, "histor_federation_members", ""); got != 1 {
		t.Errorf("members gauge %v, want 1", got)
	}
}

// fedSeries is the sum of the federation's series name in fn's registry whose result label
// is result, or of all of them when result is "".
func fedSeries(t *testing.T, fn *fedNode, name, result string) float64 {
	t.Helper()
	if result == "" {
		return promtest.Sum(t, fn.node.cfg.Registry, name)
	}
	return promtest.Sum(t, fn.node.cfg.Registry, name, "result", result)
}

// TestMembersFileAtStart: at start, a members file that does not parse refuses the config.
func TestMembersFileAtStart(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "members")
	os.WriteFile(bad, []byte("did:key:nonsense\n"), 0o644)
	cfg := Config{DataDir: t.TempDir(), P2PListen: []string{"/ip4/127.0.0.1/tcp/4001"}, MembersFile: bad}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "nonsense") {
		t.Errorf("a bad members file at start: %v", err)
	}
}
