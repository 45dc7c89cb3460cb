package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Source serves one observer's log by the paths of C2SP tlog-tiles, relative to the log's
// prefix: "checkpoint", "tile/<L>/<N>[.p/<W>]", "tile/entries/<N>[.p/<W>]"; and its
// evidence by SRI. Nothing a Source returns is trusted.
type Source interface {
	// Name says where the bytes come from, for logs, errors and metrics.
	Name() string
	// Get returns the body at path, at most max bytes; more is an error wrapping
	// ErrOversized. A path the source does not have is an error wrapping ErrNotFound.
	Get(ctx context.Context, path string, max int) ([]byte, error)
	// Evidence returns the evidence body stored under sri, at most max bytes.
	Evidence(ctx context.Context, sri string, max int) ([]byte, error)
}

// ErrNotFound is wrapped by a Source's answer for a path it does not have.
var ErrNotFound = errors.New("not found")

// HTTPSource reads a log over HTTP: tiles under LogURL ("https://host/log/" for an
// observer's own log, "https://host/mirror/<did>/" for a node's mirror of it) and evidence
// under EvidenceURL ("https://host/api/v1/evidence/").
type HTTPSource struct {
	LogURL      string
	EvidenceURL string
	Client      *http.Client // nil: http.DefaultClient, which the caller should not want
}

func (s *HTTPSource) Name() string { return s.LogURL }

func (s *HTTPSource) Get(ctx context.Context, path string, max int) ([]byte, error) {
	return s.get(ctx, strings.TrimSuffix(s.LogURL, "/")+"/"+path, max)
}

func (s *HTTPSource) Evidence(ctx context.Context, sri string, max int) ([]byte, error) {
	if s.EvidenceURL == "" {
		return nil, fmt.Errorf("evidence %s: %w", sri, ErrNotFound)
	}
	return s.get(ctx, strings.TrimSuffix(s.EvidenceURL, "/")+"/"+sri, max)
}

func (s *HTTPSource) get(ctx context.Context, url string, max int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	c := s.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("GET %s: %w", url, ErrNotFound)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return ReadBounded(resp.Body, max)
}

// ReadBounded reads r to its end, refusing more than max bytes with ErrOversized.
func ReadBounded(r io.Reader, max int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrOversized, max)
	}
	return b, nil
}
