package federation

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseMembersFile(t *testing.T) {
	const did = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
	text := "# members\n\n  peers/b.descriptor  # relative\n/abs/c.descriptor\n" + did + "=/ip4/192.0.2.1/tcp/4001/p2p/12D3KooW\n" + did + "\n"
	mf, err := parseMembersFile([]byte(text), "/etc/histor")
	if err != nil {
		t.Fatal(err)
	}
	wantPeers := []string{"/etc/histor/peers/b.descriptor", "/abs/c.descriptor", did + "=/ip4/192.0.2.1/tcp/4001/p2p/12D3KooW"}
	if !slices.Equal(mf.peers, wantPeers) || !slices.Equal(mf.allow, []string{did}) {
		t.Fatalf("peers %q allow %q", mf.peers, mf.allow)
	}
	if _, err := parseMembersFile([]byte("a b\n"), "/"); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("two entries on a line: %v", err)
	}
	big := filepath.Join(t.TempDir(), "members")
	if err := os.WriteFile(big, []byte(strings.Repeat("#\n", MaxMembersFileBytes/2+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readMembersFile(big); err == nil {
		t.Error("a members file over MaxMembersFileBytes was read")
	}
}
