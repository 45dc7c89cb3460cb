package registry

import (
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/histor-observer/histor/log/clip"
	"github.com/histor-observer/histor/log/mtl"
)

// Skip reasons decided at harvest time. The crawl adds its own statuses for
// targets it does dial; these two mean it never will.
const (
	// SkipTemplated: the URL holds {…} variables that need per-user values.
	SkipTemplated = "templated-url"
	// SkipOptOut: the operator's opt-out list covers the host or endpoint.
	SkipOptOut = "opt-out"
)

// Registry statuses, as the official registry spells them.
const (
	StatusActive     = "active"
	StatusDeprecated = "deprecated"
	StatusDeleted    = "deleted"
)

// Transports the crawl observes; other remote types are not targets.
const (
	TransportStreamable = "streamable-http"
	TransportSSE        = "sse"
)

// MaxRemotesPerServer bounds targets per server, as HISTOR does, so one
// record cannot enlist a thousand endpoints.
const MaxRemotesPerServer = 3

// Bounds on registry text we keep: it is anyone's writing. HISTOR keeps
// 2000 characters of a description and 500 of a repository or website
// link.
const (
	maxNameBytes        = 200 // the registry's own limit on names
	maxTextBytes        = 300
	maxDescriptionBytes = 2000
	maxLinkBytes        = 500
	maxURLBytes         = 2000
)

// Target is one remote endpoint of one registry server.
type Target struct {
	ID      string `json:"id"` // mtl.ServerID(Name, Endpoint)
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
	// Description, Repository and Website are the record's description,
	// repository.url and websiteUrl, clipped; "" when absent or unusable
	// (a link must be an http or https URL).
	Description    string    `json:"description,omitempty"`
	Repository     string    `json:"repository,omitempty"`
	Website        string    `json:"website,omitempty"`
	Endpoint       string    `json:"endpoint"`
	Transport      string    `json:"transport"`      // TransportStreamable or TransportSSE
	RegistryStatus string    `json:"registryStatus"` // StatusActive, StatusDeprecated or StatusDeleted
	PublishedAt    time.Time `json:"publishedAt,omitzero"`
	UpdatedAt      time.Time `json:"updatedAt,omitzero"`
	Skip           string    `json:"skip,omitempty"`     // "" = dial it; else SkipTemplated or SkipOptOut
	Delisted       bool      `json:"delisted,omitempty"` // set only by Delist
	// Package is set on a stdio package target (Transport TransportStdio,
	// Endpoint npm:<name> or pypi:<name>): the version its listing names,
	// as npm:<name>@<version> or pypi:<name>==<version>. Env holds the names
	// of the environment variables the listing declares.
	Package string   `json:"package,omitempty"`
	Env     []string `json:"env,omitempty"`
	// Registry is set on a target that is not from the crawled registry
	// (a curated one): the registry URN its subject names, histor's own
	// namespace, so a label never claims a listing the server lacks.
	Registry string `json:"registry,omitempty"`
}

// Sandboxed reports whether t is a package the sandbox runs rather than an
// endpoint the crawl dials.
func (t Target) Sandboxed() bool { return t.Transport == TransportStdio }

// record is one server entry as the registry listed it.
type record struct {
	Server struct {
		Name        string `json:"name"`
		Title       string `json:"title"`
		Version     string `json:"version"`
		Description string `json:"description"`
		Repository  struct {
			URL string `json:"url"`
		} `json:"repository"`
		Website  string   `json:"websiteUrl"`
		Remotes  []remote `json:"remotes"`
		Packages []pkg    `json:"packages"`
	} `json:"server"`
	Meta struct {
		Official struct {
			Status      string `json:"status"`
			PublishedAt string `json:"publishedAt"`
			UpdatedAt   string `json:"updatedAt"`
			IsLatest    bool   `json:"isLatest"`
		} `json:"io.modelcontextprotocol.registry/official"`
	} `json:"_meta"`
	published, updated time.Time
}

type remote struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// compact cuts a decoded record down to what its targets need: clipped
// display text, parsed times, a known status and at most
// MaxRemotesPerServer usable remotes. A harvest keeps every record until its
// last page, so this bounds what one registry entry can hold in memory
// (about 9.5 KiB) however large the entry was.
func (r *record) compact() {
	s, o := &r.Server, &r.Meta.Official
	// Clones, so nothing kept shares memory with the text it was cut from.
	s.Title, s.Version = strings.Clone(displayText(s.Title)), strings.Clone(displayText(s.Version))
	s.Description = strings.Clone(descriptionText(s.Description))
	s.Repository.URL, s.Website = strings.Clone(linkText(s.Repository.URL)), strings.Clone(linkText(s.Website))
	r.published, r.updated = parseTime(o.PublishedAt), parseTime(o.UpdatedAt)
	o.Status, o.PublishedAt, o.UpdatedAt = status(o.Status), "", ""
	var kept []remote
	seen := map[string]bool{}
	for _, rm := range s.Remotes {
		if len(kept) == MaxRemotesPerServer {
			break
		}
		url := strings.TrimSpace(rm.URL)
		if (rm.Type != TransportStreamable && rm.Type != TransportSSE) ||
			url == "" || len(url) > maxURLBytes || !cleanText(url) || seen[url] {
			continue
		}
		seen[url] = true
		rm.URL = strings.Clone(url) // not a substring of the padded original
		kept = append(kept, rm)
	}
	s.Remotes = kept
	s.Packages = compactPackages(s.Packages)
}

// newer reports whether r should replace old as the record kept for a name:
// the registry's isLatest flag first, then the newer publishedAt.
func (r *record) newer(old *record) bool {
	rl, ol := r.Meta.Official.IsLatest, old.Meta.Official.IsLatest
	if rl != ol {
		return rl
	}
	return r.published.After(old.published)
}

// selectLatest keeps one record per server name.
func selectLatest(recs []*record) map[string]*record {
	byName := make(map[string]*record, len(recs))
	for _, r := range recs {
		if old, ok := byName[r.Server.Name]; !ok || r.newer(old) {
			byName[r.Server.Name] = r
		}
	}
	return byName
}

// targets turns the kept records into targets, sorted by name then endpoint
// so two harvests of the same registry give the same list.
func targets(byName map[string]*record, opt *OptOut) []Target {
	var out []Target
	for _, r := range byName {
		out = append(out, recordTargets(r, opt)...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Endpoint < out[j].Endpoint
	})
	return out
}

// recordTargets turns a compacted record's remotes into targets.
func recordTargets(r *record, opt *OptOut) []Target {
	out := make([]Target, 0, len(r.Server.Remotes)+len(r.Server.Packages))
	for _, rm := range r.Server.Remotes {
		out = append(out, newTarget(r, rm.Type, rm.URL, opt))
	}
	for _, p := range r.Server.Packages {
		out = append(out, packageTarget(r, p, opt))
	}
	return out
}

func newTarget(r *record, transport, url string, opt *OptOut) Target {
	t := Target{
		ID:             mtl.ServerID(r.Server.Name, url),
		Name:           r.Server.Name,
		Title:          r.Server.Title,
		Version:        r.Server.Version,
		Description:    r.Server.Description,
		Repository:     r.Server.Repository.URL,
		Website:        r.Server.Website,
		Endpoint:       url,
		Transport:      transport,
		RegistryStatus: r.Meta.Official.Status,
		PublishedAt:    r.published,
		UpdatedAt:      r.updated,
	}
	switch {
	case opt.Covers(url):
		// The operator's wish wins over every other reason.
		t.Skip = SkipOptOut
	case strings.ContainsAny(url, "{}"):
		t.Skip = SkipTemplated
	}
	return t
}

// status maps the registry's status onto the three we know; an unknown or
// missing one is read as active, as the registry's default is.
func status(s string) string {
	switch s {
	case StatusDeprecated, StatusDeleted:
		return s
	}
	return StatusActive
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// validName accepts what can safely key a target: non-empty, bounded,
// valid UTF-8 without control characters.
func validName(s string) bool {
	return s != "" && len(s) <= maxNameBytes && cleanText(s)
}

func cleanText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// displayText drops text that is not clean and clips the rest to
// maxTextBytes; titles and versions are display text, never keys.
func displayText(s string) string {
	if !cleanText(s) {
		return ""
	}
	return clip.String(s, maxTextBytes)
}

// descriptionText is a description as kept: line breaks and tabs stay,
// every other control character becomes U+FFFD (a NUL or an escape
// sequence is no one's prose), clipped to maxDescriptionBytes.
func descriptionText(s string) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) > 4*maxDescriptionBytes {
		s = s[:4*maxDescriptionBytes] // enough to clip from; the map below would read it all
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return unicode.ReplacementChar
		}
		return r
	}, s)
	return clip.String(s, maxDescriptionBytes)
}

// linkText is a repository or website link as kept: clean text that is an
// http or https URL, clipped to maxLinkBytes; "" otherwise, so nothing a
// reader follows from a server's page is a script or a local file.
func linkText(s string) string {
	s = strings.TrimSpace(s)
	lower := strings.ToLower(s[:min(len(s), len("https://"))])
	if !cleanText(s) || !strings.HasPrefix(lower, "https://") && !strings.HasPrefix(lower, "http://") {
		return ""
	}
	return clip.String(s, maxLinkBytes)
}

// Delist returns the targets of previous that h no longer lists, marked
// Delisted. It returns nil unless h is complete: a partial harvest says
// nothing about what is missing.
func Delist(previous []Target, h *Result) []Target {
	if h == nil || !h.Complete {
		return nil
	}
	now := make(map[string]bool, len(h.Targets))
	for _, t := range h.Targets {
		now[t.ID] = true
	}
	var gone []Target
	for _, t := range previous {
		if !now[t.ID] {
			t.Delisted = true
			gone = append(gone, t)
		}
	}
	return gone
}
