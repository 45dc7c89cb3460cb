package registry

import (
	"regexp"
	"strings"
)

// TransportStdio is the transport of a package target: a server the user's
// own client starts. The crawl never dials one; the sandbox runs it.
const TransportStdio = "stdio"

// Package registries the sandbox observes.
const (
	PackageNPM  = "npm"
	PackagePyPI = "pypi"
)

// Bounds on what one package entry can enlist.
const (
	maxEnvVars    = 32
	maxEnvNameLen = 100
)

var (
	npmName    = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]{0,100}/)?[a-z0-9][a-z0-9._~-]{0,100}$`)
	pypiName   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,126}[a-z0-9])?$`)
	versionRE  = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$`)
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	pypiRunsRE = regexp.MustCompile(`[-_.]+`)
)

// pkg is one packages[] entry as the registry lists it.
type pkg struct {
	RegistryType string `json:"registryType"`
	Identifier   string `json:"identifier"`
	Version      string `json:"version"`
	Transport    struct {
		Type string `json:"type"`
	} `json:"transport"`
	Env []envVar `json:"environmentVariables"`
}

// envVar is one environmentVariables[] member; only its name is kept.
type envVar struct {
	Name string `json:"name"`
}

// PyPINormalise is a PyPI project name as PEP 503 compares it.
func PyPINormalise(name string) string {
	return strings.ToLower(pypiRunsRE.ReplaceAllString(name, "-"))
}

// PackageKey is the endpoint of a package target, HISTOR's form:
// npm:<name> or pypi:<PEP 503 name>; "" for a name the sandbox refuses.
func PackageKey(registryType, name string) string {
	switch registryType {
	case PackageNPM:
		if npmName.MatchString(name) {
			return "npm:" + name
		}
	case PackagePyPI:
		if n := PyPINormalise(name); pypiName.MatchString(n) {
			return "pypi:" + n
		}
	}
	return ""
}

// PackageSpec is the artifact of one observed version: npm:<name>@<version>
// or pypi:<name>==<version>, the labels' artifact package.
func PackageSpec(key, version string) string {
	switch {
	case strings.HasPrefix(key, "npm:"):
		return key + "@" + version
	case strings.HasPrefix(key, "pypi:"):
		return key + "==" + version
	}
	return ""
}

// ValidVersion reports whether v is a version the sandbox accepts.
func ValidVersion(v string) bool { return versionRE.MatchString(v) }

// compactPackages keeps at most MaxRemotesPerServer npm or PyPI stdio
// packages with a name and version the sandbox accepts, and the names of
// their declared environment variables (which get placeholders).
func compactPackages(in []pkg) []pkg {
	var kept []pkg
	seen := map[string]bool{}
	for _, p := range in {
		if len(kept) == MaxRemotesPerServer {
			break
		}
		key := PackageKey(p.RegistryType, p.Identifier)
		if key == "" || p.Transport.Type != TransportStdio || seen[key] ||
			(p.Version != "" && !versionRE.MatchString(p.Version)) {
			continue
		}
		seen[key] = true
		p.Identifier = strings.Clone(strings.TrimPrefix(strings.TrimPrefix(key, "npm:"), "pypi:"))
		p.Version = strings.Clone(p.Version)
		p.Env = compactEnv(p.Env)
		kept = append(kept, p)
	}
	return kept
}

func compactEnv(in []envVar) []envVar {
	var out []envVar
	for _, e := range in {
		if len(out) == maxEnvVars {
			break
		}
		if len(e.Name) <= maxEnvNameLen && envName.MatchString(e.Name) {
			e.Name = strings.Clone(e.Name)
			out = append(out, e)
		}
	}
	return out
}

// packageTarget is the target of one kept package: its endpoint is the
// package key, so its id is stable across versions, and Package names the
// version the registry lists (the sandbox may observe a newer one).
func packageTarget(r *record, p pkg, opt *OptOut) Target {
	key := PackageKey(p.RegistryType, p.Identifier)
	t := newTarget(r, TransportStdio, key, opt)
	if p.Version != "" {
		t.Package = PackageSpec(key, p.Version)
	}
	for _, e := range p.Env {
		t.Env = append(t.Env, e.Name)
	}
	return t
}
