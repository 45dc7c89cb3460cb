package registry

import (
	"bufio"
	"bytes"
	"fmt"
	"net/url"
	"os"
	"strings"

	"golang.org/x/net/idna"
)

// OptOut is the operator's list of hosts and endpoints the crawl leaves alone.
//
// A host entry covers the host and all its subdomains; an endpoint entry (a
// URL with a scheme) covers that URL and every URL below it on a path
// boundary. Opted-out targets stay listed with Skip "opt-out".
type OptOut struct {
	hosts     map[string]bool
	endpoints []string
}

// LoadOptOut reads an opt-out file: one host name or endpoint URL per line;
// blank lines and everything after '#' are ignored.
func LoadOptOut(path string) (*OptOut, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading opt-out list: %w", err)
	}
	o, err := ParseOptOut(b)
	if err != nil {
		return nil, fmt.Errorf("reading opt-out list %s: %w", path, err)
	}
	return o, nil
}

// ParseOptOut parses the contents of an opt-out file (see LoadOptOut).
func ParseOptOut(b []byte) (*OptOut, error) {
	o := &OptOut{hosts: map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if err := o.add(line); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scanning: %w", err)
	}
	return o, nil
}

func (o *OptOut) add(entry string) error {
	if strings.Contains(entry, "://") {
		u, err := url.Parse(entry)
		if err != nil || u.Host == "" {
			return fmt.Errorf("endpoint %q is not an absolute URL", entry)
		}
		o.endpoints = append(o.endpoints, entry)
		return nil
	}
	if strings.ContainsAny(entry, "/ \t@?") {
		return fmt.Errorf("%q is neither a host name nor a URL", entry)
	}
	o.hosts[normalHost(entry)] = true
	return nil
}

// Len is the number of entries.
func (o *OptOut) Len() int {
	if o == nil {
		return 0
	}
	return len(o.hosts) + len(o.endpoints)
}

// Covers reports whether endpoint is opted out. A nil OptOut covers nothing.
func (o *OptOut) Covers(endpoint string) bool {
	if o == nil {
		return false
	}
	for _, e := range o.endpoints {
		if underURL(endpoint, e) {
			return true
		}
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	// Walk up the labels so an entry for example.com covers mcp.example.com.
	for h := normalHost(u.Hostname()); h != ""; {
		if o.hosts[h] {
			return true
		}
		_, rest, ok := strings.Cut(h, ".")
		if !ok {
			break
		}
		h = rest
	}
	return false
}

// underURL reports whether endpoint is entry or lies below it. The boundary
// check keeps https://a.example from covering https://a.example.net.
func underURL(endpoint, entry string) bool {
	if !strings.HasPrefix(endpoint, entry) {
		return false
	}
	if len(endpoint) == len(entry) || strings.HasSuffix(entry, "/") {
		return true
	}
	switch endpoint[len(entry)] {
	case '/', '?', '#':
		return true
	}
	return false
}

// normalHost is h as the crawler dials it: lower case, no trailing dot, in
// IDNA ASCII when it is a valid name, so a Unicode entry and the ASCII form
// of the same name (or the other way round) match.
func normalHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if a, err := idna.Lookup.ToASCII(h); err == nil {
		return a
	}
	return h
}
