package trap

import (
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/histor-observer/histor/sandbox"
)

// Record is what one trap saw: one DNS question, one HTTP request, one SMTP
// session or one raw connection. Nothing in it was forwarded anywhere.
type Record struct {
	At         time.Time // when the trap finished with it: phases split on this
	Protocol   string    // dns, http, https, smtp, tcp
	Host       string    // the name asked (dns), Host header, SNI, or the one name looked up before
	QType      string    // dns: A, AAAA, MX, ...
	Address    string    // original destination address (tcp)
	Port       int       // original destination port
	SNI        string
	Method     string
	Path       string
	From       string   // smtp MAIL FROM
	Recipients []string // JSON/form recipient fields, SMTP RCPT; at most maxRecipients
	FirstBytes string   // printable prefix of the payload, at most firstBytes
	Bytes      int64    // payload bytes received (or declared, when over the cap)
	SHA256     string   // hex, of the payload received (its first PayloadCap bytes when truncated)
	Canaries   []sandbox.PlaceholderUse
	Truncated  bool   // the payload went over PayloadCap
	Incomplete string // why this is not the whole exchange: too-large, timeout, unsupported-command, tls-handshake, unparsed, overloaded
}

// Bounds of what a record keeps.
const (
	PayloadCap    = 256 << 10 // bytes of a body, message or raw stream
	firstBytes    = 256
	maxRecipients = 40
	maxField      = 320
)

// Attempt maps a record onto the observation's shape.
func (r Record) Attempt() sandbox.NetworkAttempt {
	return sandbox.NetworkAttempt{
		Protocol: r.Protocol, Host: r.Host, Address: r.Address, Port: r.Port,
		SNI: r.SNI, Method: r.Method, Path: r.Path, Recipients: r.Recipients,
		FirstBytes: r.FirstBytes, Bytes: r.Bytes, SHA256: r.SHA256, Canary: len(r.Canaries) > 0,
	}
}

// Split keeps the records with from <= At < to and maps them: DNS questions
// become lookups (distinct, in order), the rest network attempts, and every
// canary a trap saw a placeholder use.
func Split(recs []Record, from, to time.Time) (lookups []string, attempts []sandbox.NetworkAttempt, uses []sandbox.PlaceholderUse) {
	for _, r := range recs {
		if r.At.Before(from) || !r.At.Before(to) {
			continue
		}
		uses = append(uses, r.Canaries...)
		if r.Protocol == "dns" {
			if !slices.Contains(lookups, r.Host) {
				lookups = append(lookups, r.Host)
			}
			continue
		}
		attempts = append(attempts, r.Attempt())
	}
	return lookups, attempts, uses
}

// attributionWindow is how far back a lookup can name a connection to the
// trap address that carries no name of its own.
const attributionWindow = 30 * time.Second

// store keeps a Network's records, bounded.
type store struct {
	mu        sync.Mutex
	max       int
	trapAddr  string
	recs      []Record // guarded by mu
	truncated bool     // a record was dropped; guarded by mu
	lookups   []lookup // recent names for attribution, at most maxLookups; guarded by mu
}

type lookup struct {
	at   time.Time
	name string
}

const maxLookups = 256

func newStore(max int, trapAddr netip.Addr) *store {
	return &store{max: max, trapAddr: trapAddr.String()}
}

// add stamps and keeps r, attributing it to a looked-up name when it is a
// connection to the trap address without a name of its own and exactly one
// distinct name was looked up within the window: never a guess between two.
func (s *store) add(r Record) {
	if r.At.IsZero() {
		r.At = time.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Protocol == "dns" {
		s.lookups = append(s.lookups, lookup{r.At, r.Host})
		if len(s.lookups) > maxLookups {
			s.lookups = s.lookups[len(s.lookups)-maxLookups:]
		}
	} else if r.Host == "" && r.Address == s.trapAddr {
		r.Host = s.onlyName(r.At)
	}
	if len(s.recs) >= s.max {
		s.truncated = true
		return
	}
	s.recs = append(s.recs, r)
}

func (s *store) onlyName(at time.Time) string {
	name := ""
	for _, l := range s.lookups {
		if at.Sub(l.at) > attributionWindow || l.at.After(at) {
			continue
		}
		if name != "" && name != l.name {
			return ""
		}
		name = l.name
	}
	return name
}

func (s *store) snapshot() ([]Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recs), s.truncated
}

// Records returns a copy of the records so far, and whether any was dropped
// for the MaxRecords bound.
func (n *Network) Records() ([]Record, bool) { return n.store.snapshot() }

// printable gives the first firstBytes bytes of b with everything outside
// printable ASCII as '.'.
func printable(b []byte) string {
	if len(b) > firstBytes {
		b = b[:firstBytes]
	}
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		out[i] = c
	}
	return string(out)
}

// clip bounds a recorded string field.
func clip(s string) string {
	if len(s) > maxField {
		return s[:maxField]
	}
	return s
}
