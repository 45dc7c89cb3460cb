package pkgs

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// Kind is the ecosystem a package belongs to.
type Kind string

// The ecosystems.
const (
	NPM  Kind = "npm"
	PyPI Kind = "pypi"
)

// The names and versions HISTOR's sandbox accepts; anything else is refused
// before a request leaves the machine, so a spec can never smuggle a path,
// a query or a second argument into a registry URL or an install command.
var (
	npmName  = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]{0,100}/)?[a-z0-9][a-z0-9._~-]{0,100}$`)
	pypiName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$`)
	version  = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$`)
	pep503   = regexp.MustCompile(`[-_.]+`)
)

// Spec is one package asked for. Version is empty for "the latest"; File is
// set (and Name and Version empty until resolved) for a local artifact.
type Spec struct {
	Kind    Kind
	Name    string // npm name as given; PyPI name PEP 503-normalised
	Version string
	File    string // local .tgz (npm) or .whl (PyPI)
}

// SpecError is a spec refused before anything was fetched.
type SpecError struct {
	Input  string
	Reason string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("package spec %q: %s", clip(e.Input, 120), e.Reason)
}

// ParseSpec reads npm:<name>@<version>, npm:<name>, pypi:<name>==<version>,
// pypi:<name>, or the path of a local .tgz or .whl file.
func ParseSpec(s string) (Spec, error) {
	refuse := func(reason string) (Spec, error) { return Spec{}, &SpecError{Input: s, Reason: reason} }
	switch {
	case strings.HasPrefix(s, "npm:"):
		name, ver := splitNPM(strings.TrimPrefix(s, "npm:"))
		return checked(Spec{Kind: NPM, Name: name, Version: ver}, s)
	case strings.HasPrefix(s, "pypi:"):
		name, ver, _ := strings.Cut(strings.TrimPrefix(s, "pypi:"), "==")
		if !pypiName.MatchString(name) {
			return refuse("not a PyPI project name")
		}
		return checked(Spec{Kind: PyPI, Name: NormalisePyPI(name), Version: ver}, s)
	case strings.HasSuffix(s, ".tgz"):
		return localSpec(NPM, s)
	case strings.HasSuffix(s, ".whl"):
		return localSpec(PyPI, s)
	}
	return refuse("want npm:<name>[@<version>], pypi:<name>[==<version>] or a .tgz/.whl file")
}

// splitNPM splits name@version, keeping a scope's leading "@".
func splitNPM(s string) (name, ver string) {
	if i := strings.LastIndex(s, "@"); i > 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

func checked(sp Spec, input string) (Spec, error) {
	if sp.Kind == NPM && !npmName.MatchString(sp.Name) {
		return Spec{}, &SpecError{Input: input, Reason: "not an npm package name"}
	}
	if sp.Version != "" && !version.MatchString(sp.Version) {
		return Spec{}, &SpecError{Input: input, Reason: "not a version"}
	}
	if strings.HasSuffix(input, "@") || strings.HasSuffix(input, "==") {
		return Spec{}, &SpecError{Input: input, Reason: "empty version"}
	}
	return sp, nil
}

func localSpec(k Kind, s string) (Spec, error) {
	if strings.ContainsAny(s, "\x00\n\r") || strings.HasPrefix(s, "-") {
		return Spec{}, &SpecError{Input: s, Reason: "not a usable file path"}
	}
	return Spec{Kind: k, File: filepath.Clean(s)}, nil
}

// Registry is the Observation's registry member: npm, pypi or local.
func (s Spec) Registry() string {
	if s.File != "" {
		return "local"
	}
	return string(s.Kind)
}

// Artifact is the canonical artifact string, npm:<name>@<version> or
// pypi:<name>==<version>: the label artifact "package" and the queue's
// dedup id. It is empty while the version is not known (latest, or a local
// file not yet read).
func (s Spec) Artifact() string {
	if s.Name == "" || s.Version == "" {
		return ""
	}
	if s.Kind == NPM {
		return "npm:" + s.Name + "@" + s.Version
	}
	return "pypi:" + s.Name + "==" + s.Version
}

// String is the spec as ParseSpec reads it back.
func (s Spec) String() string {
	if s.File != "" {
		return s.File
	}
	if a := s.Artifact(); a != "" {
		return a
	}
	return string(s.Kind) + ":" + s.Name
}

// NormalisePyPI is PEP 503's name normalisation: lower case, runs of -_.
// become one "-".
func NormalisePyPI(name string) string {
	return strings.ToLower(pep503.ReplaceAllString(name, "-"))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
