package federation

import (
	"crypto/ed25519"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/histor-observer/histor/log/format"
)

// DescriptorPath is where a node running gossip writes its signed observer
// descriptor at start, for its peers' Peers: Dir/observer.descriptor.
func (f *Federation) DescriptorPath() string { return filepath.Join(f.cfg.Dir, "observer.descriptor") }

// WriteDescriptor signs this observer's descriptor as it would at start and writes it to
// path (through a temporary file renamed over it), for peers to configure before this node
// first runs; nothing need be open.
func (f *Federation) WriteDescriptor(path string) ([]byte, error) {
	desc, err := f.Descriptor()
	if err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, desc, 0o644); err != nil {
		return nil, fmt.Errorf("writing observer descriptor: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("writing observer descriptor: %w", err)
	}
	return desc, nil
}

// PeerID is the libp2p peer ID of the gossip host, derived from P2PKey.
func (f *Federation) PeerID() string {
	return format.PeerIDFromKey(f.cfg.P2PKey.Public().(ed25519.PublicKey))
}

// Descriptor binds the log key to the witness and host keys, the listen
// addresses a peer can dial (not the unspecified ones) and the public URL:
// PublicURL when it is https, else https:// and the origin's host part (a
// descriptor names an https URL only). It is signed now; nothing need be open.
func (f *Federation) Descriptor() ([]byte, error) {
	cos, err := format.NewCosigner(f.cfg.WitnessName, f.cfg.WitnessKey.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, fmt.Errorf("making observer descriptor: %w", err)
	}
	var addrs []string
	for _, a := range f.cfg.P2PListen {
		if !unspecifiedAddr(a) {
			addrs = append(addrs, a)
		}
	}
	url := f.cfg.PublicURL
	if !strings.HasPrefix(url, "https://") {
		host, _, _ := strings.Cut(f.cfg.LogOrigin, "/")
		url = "https://" + host
	}
	desc, err := format.SignObserver(f.cfg.LogKey, format.Observer{Origin: f.cfg.LogOrigin, Witness: cos,
		P2PKey: f.cfg.P2PKey.Public().(ed25519.PublicKey), Addrs: addrs, URL: url, Time: uint64(f.cfg.Now().Unix())})
	if err != nil {
		return nil, fmt.Errorf("making observer descriptor: %w", err)
	}
	return desc, nil
}

// unspecifiedAddr: /ip4/0.0.0.0/… or /ip6/::/….
func unspecifiedAddr(a string) bool {
	parts := strings.Split(a, "/")
	if len(parts) < 3 || (parts[1] != "ip4" && parts[1] != "ip6") {
		return false
	}
	ip, err := netip.ParseAddr(parts[2])
	return err == nil && ip.IsUnspecified()
}
