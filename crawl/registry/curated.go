package registry

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/histor-observer/histor/log/mtl"
)

// curatedJSON is configs/curated.json, embedded (a test keeps the two
// identical).
//
//go:embed curated.json
var curatedJSON []byte

// CuratedRegistry is the registry URN of histor's own curated targets.
const CuratedRegistry = "urn:awr:mtl:1:registry:github.com/histor-observer/histor/curated"

// maxCurated bounds the targets one curated document can enlist.
const maxCurated = 100_000

// Curated is a curated list: targets beyond the registry, in the list's
// order (packages by downloads: the order never-observed packages run in).
type Curated struct {
	Registry string
	Targets  []Target
	// Rank is each target id's place in the list, 0 first.
	Rank map[string]int
}

type curatedDoc struct {
	Registry string `json:"registry"`
	Servers  []struct {
		Name        string `json:"name"`
		Endpoint    string `json:"endpoint"`
		Title       string `json:"title"`
		Description string `json:"description"`
		Website     string `json:"website"`
		Weekly      int64  `json:"weekly"`
	} `json:"servers"`
}

// DefaultCurated is the list histor ships.
func DefaultCurated() (*Curated, error) { return ParseCurated(curatedJSON) }

// ParseCurated reads a curated document. An entry whose endpoint is an
// https URL is a remote target; npm:<name> and pypi:<name> are package
// targets. Entries with no usable name or endpoint are refused, not
// skipped: the operator wrote the list.
func ParseCurated(b []byte) (*Curated, error) {
	var doc curatedDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("reading curated list: %w", err)
	}
	if !strings.HasPrefix(doc.Registry, "urn:awr:mtl:1:registry:") {
		return nil, fmt.Errorf("curated list: registry %q is not an MTL/1 registry URN", doc.Registry)
	}
	if len(doc.Servers) > maxCurated {
		return nil, fmt.Errorf("curated list: %d entries, more than %d", len(doc.Servers), maxCurated)
	}
	c := &Curated{Registry: doc.Registry, Rank: map[string]int{}}
	for i, s := range doc.Servers {
		t, err := curatedTarget(doc.Registry, s.Name, s.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("curated list entry %d: %w", i, err)
		}
		t.Title, t.Description, t.Website = displayText(s.Title), descriptionText(s.Description), linkText(s.Website)
		if _, dup := c.Rank[t.ID]; dup {
			return nil, fmt.Errorf("curated list entry %d: %s listed twice", i, t.Endpoint)
		}
		c.Rank[t.ID] = len(c.Targets)
		c.Targets = append(c.Targets, t)
	}
	return c, nil
}

func curatedTarget(registryURN, name, endpoint string) (Target, error) {
	if name == "" || len(name) > maxNameBytes || !cleanText(name) {
		return Target{}, fmt.Errorf("unusable name %q", name)
	}
	t := Target{Name: name, Registry: registryURN, RegistryStatus: StatusActive}
	kind, ident, _ := strings.Cut(endpoint, ":")
	switch {
	case strings.HasPrefix(endpoint, "https://") && len(endpoint) <= maxURLBytes && cleanText(endpoint):
		t.Endpoint, t.Transport = endpoint, TransportStreamable
	case (kind == PackageNPM || kind == PackagePyPI) && PackageKey(kind, ident) == endpoint:
		t.Endpoint, t.Transport = endpoint, TransportStdio
	default:
		return Target{}, fmt.Errorf("endpoint %q is neither an https URL nor npm:<name> / pypi:<normalised name>", endpoint)
	}
	t.ID = mtl.ServerID(t.Name, t.Endpoint)
	return t, nil
}

// Beyond returns the curated targets whose endpoint the harvest does not
// list: what the registry lists is read from the registry instead.
func (c *Curated) Beyond(listed []Target) []Target {
	have := make(map[string]bool, len(listed))
	for _, t := range listed {
		have[t.Endpoint] = true
	}
	var out []Target
	for _, t := range c.Targets {
		if !have[t.Endpoint] {
			out = append(out, t)
		}
	}
	return out
}
