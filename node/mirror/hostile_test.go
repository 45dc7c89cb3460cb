package mirror_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/promset/promtest"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/node/mirror"
)

// hostile serves the log as it is, but rewrites what one kind of path answers.
type hostile struct {
	*logSource
	match   string // a path prefix
	rewrite func([]byte) []byte
}

func (h *hostile) Get(ctx context.Context, path string, max int) ([]byte, error) {
	body, err := h.logSource.Get(ctx, path, 1<<30)
	if err != nil || !strings.HasPrefix(path, h.match) {
		return body, err
	}
	body = h.rewrite(bytes.Clone(body))
	if len(body) > max {
		return nil, mirror.ErrOversized
	}
	return body, nil
}

func entries(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 2 {
		n := int(binary.BigEndian.Uint16(b))
		out = append(out, b[2:2+n])
		b = b[2+n:]
	}
	return out
}

func join(es [][]byte) []byte {
	var out []byte
	for _, e := range es {
		out = format.AppendBundleEntry(out, e)
	}
	return out
}

func TestHostileSourcesAreRefused(t *testing.T) {
	o := newObserver(t, "gamma")
	o.observe("com.example/a", "https://a.example/mcp", "a", 300)
	o.observe("com.example/b", "https://b.example/mcp", "b", 10)
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	cases := []struct {
		name    string
		match   string
		rewrite func([]byte) []byte
		reason  error
	}{
		{"forged entry", "tile/entries/000", func(b []byte) []byte { b[len(b)-3] ^= 1; return b }, mirror.ErrMismatch},
		{"reordered entries", "tile/entries/001", func(b []byte) []byte {
			es := entries(b)
			es[0], es[1] = es[1], es[0]
			return join(es)
		}, mirror.ErrMismatch},
		{"truncated bundle", "tile/entries/001", func(b []byte) []byte { return b[:len(b)-5] }, mirror.ErrTruncated},
		{"a bundle short of an entry", "tile/entries/000", func(b []byte) []byte { es := entries(b); return join(es[:255]) }, mirror.ErrTruncated},
		{"an extra entry", "tile/entries/001", func(b []byte) []byte { return format.AppendBundleEntry(b, []byte(`{"id":"x"}`)) }, mirror.ErrOversized},
		{"oversized bundle", "tile/entries/000", func(b []byte) []byte { return append(b, make([]byte, 1<<20)...) }, mirror.ErrOversized},
		{"forged hash tile", "tile/0/", func(b []byte) []byte { b[0] ^= 1; return b }, mirror.ErrMismatch},
		{"short hash tile", "tile/0/", func(b []byte) []byte { return b[:len(b)-32] }, mirror.ErrTruncated},
		{"checkpoint of another key", "checkpoint", func(b []byte) []byte {
			s, _ := keys.NoteSigner(o.origin, other)
			cp, _ := format.ParseCheckpointText(string(b[:bytes.Index(b, []byte("\n\n"))+1]))
			n, _ := format.SignCheckpoint(s, cp)
			return n
		}, mirror.ErrSignature},
		{"checkpoint bitflip", "checkpoint", func(b []byte) []byte { b[len(o.origin)+2] ^= 1; return b }, mirror.ErrSignature},
	}
	for _, c := range cases {
		for _, overHTTP := range []bool{false, true} {
			name := c.name
			if overHTTP {
				name += " over HTTP"
			}
			t.Run(name, func(t *testing.T) {
				reg := prometheus.NewRegistry()
				s := openStore(t, t.TempDir(), mirror.Config{MaxBundleBytes: 512 << 10, Registerer: reg})
				s.Follow(o.did, "")
				var src mirror.Source = &hostile{&logSource{"hostile", o.log}, c.match, c.rewrite}
				if overHTTP {
					src = serveHTTP(t, src)
				}
				_, err := s.Sync(context.Background(), o.did, src)
				var se *mirror.SourceError
				if !errors.As(err, &se) || !errors.Is(err, c.reason) {
					t.Fatalf("sync: %v; want a *SourceError for %v", err, c.reason)
				}
				if se.Source != src.Name() || se.Observer != o.did {
					t.Errorf("error names source %q, observer %q", se.Source, se.Observer)
				}
				if n := len(index(t, s, o.did)); n != 0 || s.Size(o.did) != 0 && c.match != "tile/entries/001" {
					t.Errorf("after a refused source the mirror holds %d entries and %d observations", s.Size(o.did), n)
				}
				if c.match == "tile/entries/001" && s.Size(o.did) > 256 {
					t.Errorf("the mirror holds %d entries, past the refused bundle", s.Size(o.did))
				}
				if got := promtest.Sum(t, reg, "histor_mirror_refused_total"); got != 1 {
					t.Errorf("refusals counted: %v, want 1", got)
				}
				// The honest source brings the mirror all the way.
				if _, err := s.Sync(context.Background(), o.did, &logSource{"honest", o.log}); err != nil {
					t.Fatal(err)
				}
				if s.Size(o.did) != o.log.Latest().Size || len(index(t, s, o.did)) != 2 {
					t.Errorf("after the honest source: %d entries, %d observations", s.Size(o.did), len(index(t, s, o.did)))
				}
			})
		}
	}
}

// serveHTTP serves src as a node's /log/ and descriptor routes do, and returns an
// HTTPSource reading it.
func serveHTTP(t *testing.T, src mirror.Source) *mirror.HTTPSource {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		var err error
		if sri, ok := strings.CutPrefix(r.URL.Path, "/api/v1/descriptors/"); ok {
			body, err = src.Evidence(r.Context(), sri, 1<<20)
		} else {
			body, err = src.Get(r.Context(), strings.TrimPrefix(r.URL.Path, "/log/"), 64<<20)
		}
		if errors.Is(err, mirror.ErrNotFound) {
			http.NotFound(w, r)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return &mirror.HTTPSource{LogURL: srv.URL + "/log/", EvidenceURL: srv.URL + "/api/v1/descriptors/", Client: srv.Client()}
}

// Two logs under one key and origin that part ways: the mirror of one, shown the other's
// checkpoint, keeps self-contained evidence and follows no further.
func TestForkMakesEvidence(t *testing.T) {
	o := newObserver(t, "delta")
	o.observe("com.example/a", "https://a.example/mcp", "a", 40)
	twin, err := hlog.Open(context.Background(), hlog.Config{Dir: t.TempDir(), Origin: o.origin, Key: o.key, DID: o.did,
		Now: func() time.Time { return o.at }})
	if err != nil {
		t.Fatal(err)
	}
	defer twin.Close()
	var es []hlog.Entry
	for i := range 20 {
		id := fmt.Sprintf("urn:uuid:00000000-0000-4000-9000-%012x", i)
		es = append(es, hlog.Entry{ID: id, Label: fmt.Appendf(nil, `{"id":%q,"twin":%d}`, id, i)})
	}
	if _, err := twin.Append(context.Background(), es, nil); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, t.TempDir(), mirror.Config{})
	s.Follow(o.did, o.origin)
	if _, err := s.Sync(context.Background(), o.did, &logSource{"twin", twin}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Sync(context.Background(), o.did, &logSource{"real", o.log})
	var fe *mirror.ForkError
	if !errors.As(err, &fe) {
		t.Fatalf("sync of the other branch: %v, want a *ForkError", err)
	}
	v := mustVerifier(t, o)
	if _, err := format.VerifyEquivocation(fe.Bundle, v); err != nil {
		t.Errorf("the fork's evidence does not verify: %v", err)
	}
	if _, err := s.Sync(context.Background(), o.did, &logSource{"twin", twin}); !errors.As(err, &fe) {
		t.Errorf("a forked observer's mirror syncs again: %v", err)
	}
}

// A crash between batches leaves the mirror at its last batch; reopened, it resumes there.
func TestResumesAfterAnInterruptedSync(t *testing.T) {
	o := newObserver(t, "epsilon")
	for i := range 8 {
		o.observe("com.example/s"+string(rune('a'+i)), "https://s.example/mcp", "x", 200)
	}
	dir := t.TempDir()
	s, err := mirror.Open(mirror.Config{Dir: dir, BundlesPerBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.Follow(o.did, "")
	src := &failing{logSource: &logSource{"flaky", o.log}, after: 3}
	if _, err := s.Sync(context.Background(), o.did, src); err == nil {
		t.Fatal("a source that stops answering: no error")
	}
	held := s.Size(o.did)
	if held == 0 || held >= o.log.Latest().Size || held%256 != 0 {
		t.Fatalf("after the interruption the mirror holds %d entries; want whole bundles short of %d", held, o.log.Latest().Size)
	}
	if s.Checkpoint(o.did) != nil {
		t.Error("a checkpoint is served before its tree is held whole")
	}
	s.Close()
	s, err = mirror.Open(mirror.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Size(o.did) != held {
		t.Fatalf("reopened: %d entries, want %d", s.Size(o.did), held)
	}
	res, err := s.Sync(context.Background(), o.did, &logSource{"honest", o.log})
	if err != nil {
		t.Fatal(err)
	}
	if res.Entries != o.log.Latest().Size-held || len(index(t, s, o.did)) != 8 {
		t.Errorf("resumed: %d entries added, %d observations; want %d and 8", res.Entries, len(index(t, s, o.did)), o.log.Latest().Size-held)
	}
}

// failing answers its first `after` bundle requests, then fails.
type failing struct {
	*logSource
	after, n int
}

func (f *failing) Get(ctx context.Context, path string, max int) ([]byte, error) {
	if strings.HasPrefix(path, "tile/entries/") {
		if f.n++; f.n > f.after {
			return nil, errors.New("connection reset")
		}
	}
	return f.logSource.Get(ctx, path, max)
}
