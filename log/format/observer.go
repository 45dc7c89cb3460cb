package format

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/mr-tron/base58"
	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/clip"
	"github.com/histor-observer/histor/log/keys"
)

// ObserverType is the first line of an observer descriptor's text. No checkpoint (three lines,
// the first an origin) and no observation digest has it, so the log key's signature over a
// descriptor cannot be passed off as one over anything else.
const ObserverType = "histor.observer/v1"

const (
	// MaxObserverBytes bounds ParseObserver's input.
	MaxObserverBytes = 4096
	// MaxObserverAddrs bounds the addr lines of a descriptor.
	MaxObserverAddrs = 8
	// maxObserverValue bounds every value of a descriptor line.
	maxObserverValue = 512
)

// Observer is a parsed observer descriptor: what one observer of the federation says about
// itself, signed with its log key under its origin, so that anyone who knows the observer's
// did:key can check every other binding in it.
//
// The text, one "<keyword> <value>" line each, in this order:
//
//	histor.observer/v1
//	origin <log origin, the note key name of its checkpoints and of this descriptor>
//	did <did:key of the log key>
//	log <signed-note verifier key of the log key, named origin>
//	witness <cosignature/v1 verifier key of its witness key>
//	peer <libp2p peer ID of its Ed25519 host key>
//	addr <multiaddr>          (0 to MaxObserverAddrs lines, no repeats)
//	url <https URL of its public API>
//	time <POSIX seconds at which it was signed>
//
// The did, log and peer lines name three distinct keys' roles; the log, witness and host keys
// must be three different keys (one per purpose, as package keys derives them).
type Observer struct {
	Origin  string
	DID     string            // did:key of LogKey
	LogKey  ed25519.PublicKey // signs checkpoints, heads, labels and this descriptor
	Witness Cosigner          // cosigns other logs' checkpoints
	P2PKey  ed25519.PublicKey // the libp2p host identity
	Addrs   []string          // multiaddrs without /p2p/, TCP or QUIC-v1 only
	URL     string            // https, no query, fragment or user info
	Time    uint64            // POSIX seconds; a newer descriptor of one DID replaces an older one
}

// PeerID is the libp2p peer ID of o's host key, in its base58btc text form ("12D3KooW…").
func (o *Observer) PeerID() string { return PeerIDFromKey(o.P2PKey) }

// PeerIDFromKey is the libp2p peer ID of an Ed25519 public key: base58btc of the identity
// multihash of the protobuf-encoded key. It panics if pub is not 32 bytes.
func PeerIDFromKey(pub ed25519.PublicKey) string {
	if len(pub) != ed25519.PublicKeySize {
		panic("format: peer ID of a key that is not 32 bytes")
	}
	return base58.Encode(append(append([]byte(nil), peerIDPrefix...), pub...))
}

// peerIDPrefix opens every Ed25519 peer ID: identity multihash (0x00), length 36, then the
// libp2p PublicKey protobuf: field 1 (type) = 1 (Ed25519), field 2 (data), 32 bytes.
var peerIDPrefix = []byte{0x00, 0x24, 0x08, 0x01, 0x12, 0x20}

// ParsePeerID returns the Ed25519 key an Ed25519 peer ID names, refusing any other key type,
// hash or spelling.
func ParsePeerID(id string) (ed25519.PublicKey, error) {
	raw, err := base58.Decode(id)
	if err != nil || len(raw) != len(peerIDPrefix)+ed25519.PublicKeySize || !bytes.HasPrefix(raw, peerIDPrefix) {
		return nil, errors.New("not an Ed25519 libp2p peer ID")
	}
	pub := ed25519.PublicKey(raw[len(peerIDPrefix):])
	if PeerIDFromKey(pub) != id {
		return nil, errors.New("peer ID is not in its canonical spelling")
	}
	return pub, nil
}

// Text renders the descriptor's note text. It checks o as ParseObserver would.
func (o *Observer) Text() (string, error) {
	if err := o.check(); err != nil {
		return "", err
	}
	logVkey, err := keys.NoteVerifierKey(o.Origin, o.LogKey)
	if err != nil {
		return "", err
	}
	witVkey, err := keys.CosignatureVerifierKey(o.Witness.Name, o.Witness.Key)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(ObserverType + "\n")
	fmt.Fprintf(&b, "origin %s\ndid %s\nlog %s\nwitness %s\npeer %s\n", o.Origin, o.DID, logVkey, witVkey, o.PeerID())
	for _, a := range o.Addrs {
		fmt.Fprintf(&b, "addr %s\n", a)
	}
	fmt.Fprintf(&b, "url %s\ntime %d\n", o.URL, o.Time)
	return b.String(), nil
}

// check applies every rule of the format to o's fields.
func (o *Observer) check() error {
	if !validKeyName(o.Origin) || len(o.Origin) > maxObserverValue {
		return fmt.Errorf("bad origin %q", clip.String(o.Origin, 80))
	}
	if len(o.LogKey) != ed25519.PublicKeySize || len(o.P2PKey) != ed25519.PublicKeySize {
		return errors.New("log or host key is not an Ed25519 public key")
	}
	if o.DID != awr.DIDKey(o.LogKey) {
		return errors.New("did is not the did:key of the log key")
	}
	if _, err := NewCosigner(o.Witness.Name, o.Witness.Key); err != nil || len(o.Witness.Name) > maxObserverValue {
		return errors.New("bad witness name or key")
	}
	if o.LogKey.Equal(o.Witness.Key) || o.LogKey.Equal(o.P2PKey) || o.Witness.Key.Equal(o.P2PKey) {
		return errors.New("log, witness and host keys must be three different keys")
	}
	if err := checkAddrs(o.Addrs); err != nil {
		return err
	}
	if err := checkPublicURL(o.URL); err != nil {
		return err
	}
	if o.Time > 1<<63-1 {
		return errors.New("time beyond 2^63-1")
	}
	return nil
}

func checkAddrs(addrs []string) error {
	if len(addrs) > MaxObserverAddrs {
		return fmt.Errorf("%d addresses, at most %d", len(addrs), MaxObserverAddrs)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if err := CheckMultiaddr(a); err != nil {
			return fmt.Errorf("address %q: %w", clip.String(a, 80), err)
		}
		if seen[a] {
			return fmt.Errorf("address %q repeated", a)
		}
		seen[a] = true
	}
	return nil
}

// CheckMultiaddr accepts the transports a HISTOR host listens on, in canonical text:
// /ip4|ip6/<addr>/tcp/<port>, /ip4|ip6/<addr>/udp/<port>/quic-v1, and the same over
// /dns|dns4|dns6/<name>. Ports are 1..65535 in canonical decimal; no /p2p/ part.
func CheckMultiaddr(a string) error {
	parts := strings.Split(a, "/")
	if len(parts) < 5 || parts[0] != "" {
		return errors.New("not /<net>/<host>/<tcp|udp>/<port>[/quic-v1]")
	}
	if err := checkMultiaddrHost(parts[1], parts[2]); err != nil {
		return err
	}
	port, err := strconv.ParseUint(parts[4], 10, 16)
	if err != nil || port == 0 || strconv.FormatUint(port, 10) != parts[4] {
		return errors.New("port is not 1..65535 in canonical decimal")
	}
	switch {
	case parts[3] == "tcp" && len(parts) == 5:
	case parts[3] == "udp" && len(parts) == 6 && parts[5] == "quic-v1":
	default:
		return errors.New("transport is neither tcp nor udp/quic-v1")
	}
	return nil
}

func checkMultiaddrHost(proto, host string) error {
	switch proto {
	case "ip4", "ip6":
		ip, err := netip.ParseAddr(host)
		if err != nil || ip.Zone() != "" || ip.String() != host || ip.Is4() != (proto == "ip4") {
			return fmt.Errorf("%s address is not canonical", proto)
		}
	case "dns", "dns4", "dns6":
		if !validDNSName(host) {
			return errors.New("bad DNS name")
		}
	default:
		return fmt.Errorf("network %q is not ip4, ip6, dns, dns4 or dns6", clip.String(proto, 80))
	}
	return nil
}

// validDNSName accepts lowercase LDH labels of 1..63 bytes, at most 253 bytes in all.
func validDNSName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func checkPublicURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || len(s) > maxObserverValue || u.Scheme != "https" || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || u.ForceQuery || u.Opaque != "" || u.String() != s ||
		strings.ToLower(u.Host) != u.Host {
		return fmt.Errorf("url %q is not a canonical https URL without query, fragment or user info", clip.String(s, 80))
	}
	return nil
}

// SignObserver fills o's DID and LogKey from logKey and returns the signed descriptor, signed
// with logKey under the key name o.Origin.
func SignObserver(logKey ed25519.PrivateKey, o Observer) ([]byte, error) {
	if len(logKey) != ed25519.PrivateKeySize {
		return nil, errors.New("signing observer descriptor: not an Ed25519 private key")
	}
	o.LogKey = logKey.Public().(ed25519.PublicKey)
	o.DID = awr.DIDKey(o.LogKey)
	text, err := o.Text()
	if err != nil {
		return nil, fmt.Errorf("signing observer descriptor: %w", err)
	}
	msg, err := SignText(o.Origin, logKey, text)
	if err != nil {
		return nil, fmt.Errorf("signing observer descriptor: %w", err)
	}
	return msg, nil
}

// ParseObserver parses a signed descriptor strictly and checks it is signed by the log key it
// names (other signature lines are refused). It proves only that the holder of that key wrote
// it: a caller pins the DID it expects (see VerifyObserver). A signature that does not verify
// is reported wrapping ErrSignature.
func ParseObserver(msg []byte) (*Observer, error) {
	if len(msg) > MaxObserverBytes {
		return nil, errors.New("parsing observer descriptor: too long")
	}
	text, ok := NoteText(msg)
	if !ok {
		return nil, errors.New("parsing observer descriptor: no signature block")
	}
	o, err := parseObserverText(text)
	if err != nil {
		return nil, fmt.Errorf("parsing observer descriptor: %w", err)
	}
	v, err := NewVerifier(o.Origin, o.LogKey)
	if err != nil {
		return nil, fmt.Errorf("parsing observer descriptor: %w", err)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return nil, fmt.Errorf("opening observer descriptor: %w", openError(err))
	}
	if err := canonicalSigs(n); err != nil {
		return nil, fmt.Errorf("parsing observer descriptor: %w", err)
	}
	if len(n.Sigs) != 1 || len(n.UnverifiedSigs) != 0 {
		return nil, errors.New("parsing observer descriptor: want exactly the log key's signature")
	}
	return o, nil
}

// VerifyObserver is ParseObserver for a descriptor that must be did's.
func VerifyObserver(msg []byte, did string) (*Observer, error) {
	o, err := ParseObserver(msg)
	if err != nil {
		return nil, err
	}
	if o.DID != did {
		return nil, fmt.Errorf("observer descriptor is %s's, not %s's", o.DID, did)
	}
	return o, nil
}

// parseObserverText parses the descriptor text and re-renders it, so only the one canonical
// spelling of a descriptor is accepted.
func parseObserverText(text string) (*Observer, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 8 || lines[0] != ObserverType {
		return nil, fmt.Errorf("first line is not %q or lines are missing", ObserverType)
	}
	r := lineReader{lines: lines[1:]}
	var o Observer
	o.Origin = r.value("origin")
	o.DID = r.value("did")
	logVkey, witVkey, peerID := r.value("log"), r.value("witness"), r.value("peer")
	for r.peek("addr") {
		o.Addrs = append(o.Addrs, r.value("addr"))
	}
	o.URL = r.value("url")
	timeText := r.value("time")
	if r.err != nil {
		return nil, r.err
	}
	if len(r.lines) != 0 {
		return nil, errors.New("unexpected lines after time")
	}
	if err := o.setKeys(logVkey, witVkey, peerID); err != nil {
		return nil, err
	}
	t, err := strconv.ParseUint(timeText, 10, 63)
	if err != nil || strconv.FormatUint(t, 10) != timeText {
		return nil, errors.New("time is not a canonical decimal")
	}
	o.Time = t
	again, err := o.Text()
	if err != nil {
		return nil, err
	}
	if again != text {
		return nil, errors.New("not in canonical form")
	}
	return &o, nil
}

func (o *Observer) setKeys(logVkey, witVkey, peerID string) error {
	v, err := note.NewVerifier(logVkey)
	if err != nil || v.Name() != o.Origin {
		return errors.New("log is not a verifier key named origin")
	}
	pub, err := awr.ParseDIDKey(o.DID)
	if err != nil {
		return fmt.Errorf("did: %w", err)
	}
	o.LogKey = pub
	if o.Witness, err = ParseCosignerKey(witVkey); err != nil {
		return err
	}
	if o.P2PKey, err = ParsePeerID(peerID); err != nil {
		return err
	}
	// Text, run next, checks that the log vkey is the did's key by rendering it again.
	return nil
}

// lineReader reads "<keyword> <value>" lines in a fixed order, keeping the first error.
type lineReader struct {
	lines []string
	err   error
}

func (r *lineReader) peek(keyword string) bool {
	return r.err == nil && len(r.lines) > 0 && strings.HasPrefix(r.lines[0], keyword+" ")
}

func (r *lineReader) value(keyword string) string {
	if r.err != nil {
		return ""
	}
	if !r.peek(keyword) {
		r.err = fmt.Errorf("want a %q line", keyword)
		return ""
	}
	v := strings.TrimPrefix(r.lines[0], keyword+" ")
	r.lines = r.lines[1:]
	if v == "" || len(v) > maxObserverValue || strings.ContainsAny(v, " \t\r") {
		r.err = fmt.Errorf("bad %s value", keyword)
	}
	return v
}
