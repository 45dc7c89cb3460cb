package submit

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/histor-observer/histor/log/format"
)

// Witness is one witness the log submits its checkpoints to.
type Witness struct {
	// URL is the witness's submission prefix (c2sp.org/tlog-witness), without a final
	// slash; checkpoints are posted to URL + "/add-checkpoint".
	URL string
	// Cosigner is the witness's cosignature/v1 key; an answer counts only with a line
	// that verifies under it.
	Cosigner format.Cosigner
}

// ParseWitness parses "URL=VKEY": an absolute http or https submission prefix (no user,
// query or fragment) and the witness's cosignature/v1 verifier key. A vkey holds no "="
// (its base64 encodes 33 bytes, a multiple of three), so the last "=" splits the two.
func ParseWitness(s string) (Witness, error) {
	i := strings.LastIndexByte(s, '=')
	if i < 0 {
		return Witness{}, fmt.Errorf("parsing witness %q: want URL=VKEY", s)
	}
	u, err := submissionPrefix(s[:i])
	if err != nil {
		return Witness{}, fmt.Errorf("parsing witness %q: %w", s, err)
	}
	c, err := format.ParseCosignerKey(s[i+1:])
	if err != nil {
		return Witness{}, fmt.Errorf("parsing witness %q: %w", s, err)
	}
	return Witness{URL: u, Cosigner: c}, nil
}

// submissionPrefix checks a submission prefix and drops a final slash.
func submissionPrefix(s string) (string, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", fmt.Errorf("bad URL: %w", err)
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "", u.Opaque != "":
		return "", errors.New("URL is not an absolute http or https URL")
	case u.User != nil, u.RawQuery != "", u.ForceQuery, u.Fragment != "", strings.Contains(s, "#"):
		return "", errors.New("URL has a user, query or fragment")
	case strings.Contains(u.Path, "//"):
		return "", errors.New("URL path has an empty segment")
	case u.String() != s:
		return "", fmt.Errorf("URL is not in its canonical form %q", u.String())
	}
	return strings.TrimSuffix(s, "/"), nil
}

// ParseWitnesses parses each "URL=VKEY" and refuses two witnesses with one URL, one key
// name or one key: each must be a separate cosigner, and metrics name them by key name.
func ParseWitnesses(specs []string) ([]Witness, error) {
	out := make([]Witness, 0, len(specs))
	for _, s := range specs {
		w, err := ParseWitness(s)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, checkDistinct(out)
}

func checkDistinct(ws []Witness) error {
	for i, a := range ws {
		for _, b := range ws[:i] {
			if a.URL == b.URL || a.Cosigner.Name == b.Cosigner.Name || a.Cosigner.Key.Equal(b.Cosigner.Key) {
				return fmt.Errorf("witnesses %s (%s) and %s (%s) share a URL, key name or key",
					b.Cosigner.Name, b.URL, a.Cosigner.Name, a.URL)
			}
		}
	}
	return nil
}

// PolicyWitnesses returns the witnesses of a tlog-policy that have a URL, which the
// policy recommends be the submission prefix. Witnesses without one are left out: a log
// cannot reach them, though their cosignatures still count when they arrive elsewhere.
func PolicyWitnesses(p *format.Policy) ([]Witness, error) {
	var out []Witness
	for _, pw := range p.Witnesses {
		if pw.URL == "" {
			continue
		}
		u, err := submissionPrefix(pw.URL)
		if err != nil {
			return nil, fmt.Errorf("policy witness %s: %w", pw.Name, err)
		}
		out = append(out, Witness{URL: u, Cosigner: pw.Cosigner})
	}
	return out, checkDistinct(out)
}
