package pkgs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/histor-observer/histor/sandbox"
)

// MountPoint is where the runner mounts an install's Dir inside the
// sandbox; Installed.Command names files under it.
const MountPoint = "/work/pkg"

// Config says where the registries are and how far to trust their answers.
// Zero values take the defaults.
type Config struct {
	// NPMRegistry is the npm registry's base URL (default
	// https://registry.npmjs.org). npm install uses it for dependencies.
	NPMRegistry string
	// PyPI is the base of PyPI's JSON API (/pypi/<name>/<version>/json) and
	// integrity API (/integrity/...) (default https://pypi.org).
	PyPI string
	// PyPIIndex is the PEP 503 simple index pip installs dependencies from
	// (default <PyPI>/simple/).
	PyPIIndex string
	// Client makes every registry request; required. Its timeout bounds a
	// request; redirects follow its policy.
	Client *http.Client
	// UserAgent names histor to the registries (default DefaultUserAgent).
	UserAgent string
	// MaxMetadata bounds a packument or JSON API answer (default 32 MiB).
	MaxMetadata int64
	// MaxArtifact bounds a tarball or wheel (default 64 MiB).
	MaxArtifact int64
	// InstallTimeout bounds npm or pip install (default 360 s).
	InstallTimeout time.Duration
	// NPMCommand and PipCommand start the host's installers (defaults
	// ["npm"] and ["python3", "-m", "pip"]).
	NPMCommand []string
	PipCommand []string
	// PythonVersion is the root image's Python, which pip picks wheels for
	// (default "3.13", Debian trixie's).
	PythonVersion string
}

// DefaultUserAgent names histor and says what its requests are for.
const DefaultUserAgent = "histor-sandbox/1 (package observer; resolves and installs, never runs package code on this host)"

// Packages resolves and installs packages; safe for concurrent use.
type Packages struct {
	cfg Config
}

// New checks cfg and fills in its defaults.
func New(cfg Config) (*Packages, error) {
	if cfg.Client == nil {
		return nil, errors.New("package registries: no HTTP client")
	}
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&cfg.NPMRegistry, "https://registry.npmjs.org")
	def(&cfg.PyPI, "https://pypi.org")
	cfg.NPMRegistry = strings.TrimSuffix(cfg.NPMRegistry, "/")
	cfg.PyPI = strings.TrimSuffix(cfg.PyPI, "/")
	def(&cfg.PyPIIndex, cfg.PyPI+"/simple/")
	def(&cfg.UserAgent, DefaultUserAgent)
	def(&cfg.PythonVersion, "3.13")
	for _, u := range []string{cfg.NPMRegistry, cfg.PyPI, cfg.PyPIIndex} {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return nil, fmt.Errorf("package registries: %q is not an http(s) URL", u)
		}
	}
	if cfg.MaxMetadata <= 0 {
		cfg.MaxMetadata = 32 << 20
	}
	if cfg.MaxArtifact <= 0 {
		cfg.MaxArtifact = 64 << 20
	}
	if cfg.InstallTimeout <= 0 {
		cfg.InstallTimeout = 360 * time.Second
	}
	if len(cfg.NPMCommand) == 0 {
		cfg.NPMCommand = []string{"npm"}
	}
	if len(cfg.PipCommand) == 0 {
		cfg.PipCommand = []string{"python3", "-m", "pip"}
	}
	return &Packages{cfg: cfg}, nil
}

// Resolved is one version as its registry (or a local file) describes it.
type Resolved struct {
	Spec      Spec   // with Name and Version filled in
	Artifact  string // npm:<name>@<version> or pypi:<name>==<version>
	Integrity string // npm: dist.integrity (else shasum); PyPI: sha256:<hex>
	URL       string // the tarball or wheel; empty for a local file
	Filename  string // the wheel's file name (PyPI)
	Facts     sandbox.VersionFacts

	check digest // what the downloaded artifact must hash to
}

// Resolve asks the registry (or reads the local file) for spec's version.
func (p *Packages) Resolve(ctx context.Context, spec Spec) (*Resolved, error) {
	switch {
	case spec.File != "" && spec.Kind == NPM:
		return resolveLocalTarball(spec)
	case spec.File != "":
		return resolveLocalWheel(spec)
	case spec.Kind == NPM:
		return p.resolveNPM(ctx, spec)
	case spec.Kind == PyPI:
		return p.resolvePyPI(ctx, spec)
	}
	return nil, &SpecError{Input: spec.String(), Reason: "unknown kind"}
}

// get fetches u, refusing a body over limit. A non-2xx answer is returned
// as its status code with no body.
func (p *Packages) get(ctx context.Context, u, accept string, limit int64) (int, []byte, error) {
	res, err := p.open(ctx, u, accept)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		return res.StatusCode, nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return 0, nil, fmt.Errorf("reading %s: %w", u, err)
	}
	if int64(len(body)) > limit {
		return 0, nil, &TooLargeError{URL: u, Limit: limit}
	}
	return res.StatusCode, body, nil
}

func (p *Packages) open(ctx context.Context, u, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("requesting %s: %w", u, err)
	}
	req.Header.Set("User-Agent", p.cfg.UserAgent)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := p.cfg.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("requesting %s: %w", u, err)
	}
	return res, nil
}

// TooLargeError is an answer or artifact over its bound.
type TooLargeError struct {
	URL   string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %d bytes", e.URL, e.Limit)
}

// metadataFailure maps a failed metadata request onto a status: 404 says
// the package or version does not exist; anything else says the registry
// could not answer, which is ours to retry and never a fact about the
// package.
func metadataFailure(what string, code int, err error) *Error {
	if err == nil && (code == http.StatusNotFound || code == http.StatusGone) {
		return fail(sandbox.StatusNotFound, nil, "%s: not in the registry", what)
	}
	if err == nil {
		err = fmt.Errorf("registry answered %d", code)
	}
	return fail(sandbox.StatusInspectionFailed, err, "%s: registry unavailable", what)
}
