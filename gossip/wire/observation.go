package wire

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
)

// ObservationType is the first line of a signed observation digest.
const ObservationType = "histor.observation/v1"

const (
	// MaxObservationBytes bounds a signed observation digest.
	MaxObservationBytes = 4096
	maxValue            = 512
	timeLayout          = "2006-01-02T15:04:05Z"
)

// Observation is a parsed observation digest: what one observer saw of one server at one
// time, and where the label that records it sits in that observer's log. It is a signed note
// by the observer's log key under its origin, with the text, one "<keyword> <value>" line
// each, in this order:
//
//	histor.observation/v1
//	observer <did:key of the log key>
//	server <server id>
//	endpoint <URL> | package <package reference>
//	digest <sha256-… SRI of the tool set> | status <lowercase word>
//	observed <YYYY-MM-DDTHH:MM:SSZ>
//	label <label id>
//	leaf <leaf index of the label>
//	size <tree size of a head that includes it>
//
// A peer's observation counts only once the label is proven included under a head this node
// verified: the digest says where to look, it proves nothing by itself.
type Observation struct {
	Raw        []byte // the signed note, as verified; nil from ParseObservationText
	Origin     string // the note key name it was signed under
	Observer   string // did:key
	Server     string
	Endpoint   string // set, or Package
	Package    string
	Digest     string // set, or Status
	Status     string
	ObservedAt time.Time // UTC, whole seconds
	LabelID    string
	LeafIndex  uint64
	TreeSize   uint64 // LeafIndex < TreeSize
}

// Text renders the note text, checking o as ParseObservationText would.
func (o *Observation) Text() (string, error) {
	if err := o.check(); err != nil {
		return "", err
	}
	subject, what := "endpoint "+o.Endpoint, "digest "+o.Digest
	if o.Package != "" {
		subject = "package " + o.Package
	}
	if o.Status != "" {
		what = "status " + o.Status
	}
	return fmt.Sprintf("%s\nobserver %s\nserver %s\n%s\n%s\nobserved %s\nlabel %s\nleaf %d\nsize %d\n",
		ObservationType, o.Observer, o.Server, subject, what, o.ObservedAt.UTC().Format(timeLayout),
		o.LabelID, o.LeafIndex, o.TreeSize), nil
}

func (o *Observation) check() error {
	if _, err := awr.ParseDIDKey(o.Observer); err != nil {
		return fmt.Errorf("observer: %w", err)
	}
	if (o.Endpoint == "") == (o.Package == "") {
		return errors.New("want exactly one of endpoint and package")
	}
	if (o.Digest == "") == (o.Status == "") {
		return errors.New("want exactly one of digest and status")
	}
	for name, v := range map[string]string{"server": o.Server, "label": o.LabelID, "endpoint": o.Endpoint, "package": o.Package} {
		if v != "" && !validValue(v) || name == "server" && v == "" || name == "label" && v == "" {
			return fmt.Errorf("bad %s", name)
		}
	}
	if o.Digest != "" && !validDigest(o.Digest) {
		return errors.New("digest is not a sha256 SRI")
	}
	if o.Status != "" && !validStatus(o.Status) {
		return errors.New("status is not a lowercase word")
	}
	if o.ObservedAt.IsZero() || !o.ObservedAt.Equal(o.ObservedAt.Truncate(time.Second)) {
		return errors.New("observed time is not in whole seconds")
	}
	if o.LeafIndex >= o.TreeSize || o.TreeSize > 1<<63-1 {
		return errors.New("leaf index is not below tree size")
	}
	return nil
}

// validValue: non-empty UTF-8 of at most maxValue bytes without spaces or control characters.
func validValue(v string) bool {
	return v != "" && len(v) <= maxValue && utf8.ValidString(v) &&
		strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) < 0
}

func validDigest(d string) bool {
	b64, ok := strings.CutPrefix(d, "sha256-")
	raw, err := base64.StdEncoding.Strict().DecodeString(b64)
	return ok && err == nil && len(raw) == 32 && base64.StdEncoding.EncodeToString(raw) == b64
}

func validStatus(s string) bool {
	if s == "" || len(s) > 32 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// SignObservation signs o with the observer's log key under origin; o.Observer must be the
// key's did:key.
func SignObservation(origin string, key ed25519.PrivateKey, o Observation) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize || o.Observer != awr.DIDKey(key.Public().(ed25519.PublicKey)) {
		return nil, errors.New("signing observation: observer is not the signing key's did:key")
	}
	text, err := o.Text()
	if err != nil {
		return nil, fmt.Errorf("signing observation: %w", err)
	}
	msg, err := format.SignText(origin, key, text)
	if err != nil {
		return nil, fmt.Errorf("signing observation: %w", err)
	}
	return msg, nil
}

// ParseObservationText parses an observation's text strictly, without its signature, so a
// validator learns whose it claims to be before paying for a signature check.
func ParseObservationText(msg []byte) (*Observation, error) {
	if len(msg) > MaxObservationBytes {
		return nil, errors.New("parsing observation: too long")
	}
	text, ok := format.NoteText(msg)
	if !ok {
		return nil, errors.New("parsing observation: no signature block")
	}
	o, err := parseObservationLines(text)
	if err != nil {
		return nil, fmt.Errorf("parsing observation: %w", err)
	}
	return o, nil
}

func parseObservationLines(text string) (*Observation, error) {
	l := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(l) != 9 || l[0] != ObservationType {
		return nil, fmt.Errorf("want %q and eight lines", ObservationType)
	}
	var o Observation
	var leaf, size, observed string
	fields := []struct {
		keys []string
		dst  []*string
	}{
		{[]string{"observer"}, []*string{&o.Observer}},
		{[]string{"server"}, []*string{&o.Server}},
		{[]string{"endpoint", "package"}, []*string{&o.Endpoint, &o.Package}},
		{[]string{"digest", "status"}, []*string{&o.Digest, &o.Status}},
		{[]string{"observed"}, []*string{&observed}},
		{[]string{"label"}, []*string{&o.LabelID}},
		{[]string{"leaf"}, []*string{&leaf}},
		{[]string{"size"}, []*string{&size}},
	}
	for i, f := range fields {
		if !setField(l[i+1], f.keys, f.dst) {
			return nil, fmt.Errorf("line %d is not a %s line", i+2, strings.Join(f.keys, " or "))
		}
	}
	var err error
	if o.ObservedAt, err = time.Parse(timeLayout, observed); err != nil {
		return nil, errors.New("observed is not YYYY-MM-DDTHH:MM:SSZ")
	}
	o.LeafIndex, _ = strconv.ParseUint(leaf, 10, 63)
	o.TreeSize, _ = strconv.ParseUint(size, 10, 63)
	again, err := o.Text()
	if err != nil {
		return nil, err
	}
	if again != text {
		return nil, errors.New("not in canonical form")
	}
	return &o, nil
}

func setField(line string, keywords []string, dst []*string) bool {
	for i, k := range keywords {
		if v, ok := strings.CutPrefix(line, k+" "); ok {
			*dst[i] = v
			return true
		}
	}
	return false
}

// VerifyObservation parses msg and checks its one signature by pub, under origin (under any
// key name when origin is "", which then becomes o.Origin). The observer line must be pub's
// did:key.
func VerifyObservation(msg []byte, pub ed25519.PublicKey, origin string) (*Observation, error) {
	o, err := ParseObservationText(msg)
	if err != nil {
		return nil, err
	}
	if o.Observer != awr.DIDKey(pub) {
		return nil, errors.New("verifying observation: observer is another key")
	}
	n, err := note.Open(msg, anyName{pub: pub, origin: origin})
	if err != nil {
		var inv *note.InvalidSignatureError
		if errors.As(err, &inv) {
			err = fmt.Errorf("%w: %w", ErrSignature, err)
		}
		return nil, fmt.Errorf("verifying observation: %w", err)
	}
	if len(n.Sigs) != 1 || len(n.UnverifiedSigs) != 0 {
		return nil, errors.New("verifying observation: want exactly the observer's signature")
	}
	// One message, one spelling: refuse stray bits in the signature's base64.
	if b, err := base64.StdEncoding.Strict().DecodeString(n.Sigs[0].Base64); err != nil ||
		base64.StdEncoding.EncodeToString(b) != n.Sigs[0].Base64 {
		return nil, errors.New("verifying observation: signature is not canonical base64")
	}
	o.Origin, o.Raw = n.Sigs[0].Name, msg
	return o, nil
}

// anyName is a note.Verifiers that knows one Ed25519 key under one name, or under every name
// when origin is "": the key ID commits to the name, so a line matches only its own name.
type anyName struct {
	pub    ed25519.PublicKey
	origin string
}

func (a anyName) Verifier(name string, hash uint32) (note.Verifier, error) {
	if (a.origin == "" || name == a.origin) && hash == keys.KeyID(name, 0x01, a.pub) {
		if v, err := format.NewVerifier(name, a.pub); err == nil {
			return v, nil
		}
	}
	return nil, &note.UnknownVerifierError{Name: name, KeyHash: hash}
}
