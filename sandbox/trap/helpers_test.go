package trap

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// needRoot skips a test that builds namespaces when it cannot.
func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	for _, tool := range []string{"ip", "iptables-restore", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
}

func newTestPool(t testing.TB, cfg Config) *Pool {
	t.Helper()
	cfg.CAFile = filepath.Join(t.TempDir(), "trap-ca.pem")
	p, err := NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testID names a test's network after its process too, so two test processes (two
// checkouts, or a run beside one killed before its cleanup) never claim one namespace.
func testID(name string) string { return fmt.Sprintf("%s-%d", name, os.Getpid()) }

// openTest opens a network for the test and closes it after.
func openTest(t testing.TB, cfg Config) (*Pool, *Network) {
	t.Helper()
	needRoot(t)
	p := newTestPool(t, cfg)
	n, err := p.Open(context.Background(), testID("test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	return p, n
}

// dialIn dials from inside the namespace at path, as the sandbox would.
func dialIn(path, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNetns(path, func() error {
		var err error
		c, err = net.DialTimeout(network, addr, 3*time.Second)
		return err
	})
	return c, err
}

func find(recs []Record, protocol string) Record {
	for _, r := range recs {
		if r.Protocol == protocol {
			return r
		}
	}
	return Record{}
}
