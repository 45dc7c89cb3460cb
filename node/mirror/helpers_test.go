package mirror_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"filippo.io/torchwood"

	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/node/mirror"
)

// observer is a real log of one observer, with real signed observation labels and their
// descriptors as evidence.
type observer struct {
	t      testing.TB
	key    ed25519.PrivateKey
	did    string
	origin string
	log    *hlog.Log
	n      int
	at     time.Time
	// padBytes sizes the other entries observe appends; 0 keeps them tiny.
	padBytes int
	// descs is the SRI of the descriptor of each server id observed last.
	descs map[string]string
}

func newObserver(t testing.TB, name string) *observer {
	t.Helper()
	seed := sha256.Sum256([]byte("mirror test observer " + name))
	key := ed25519.NewKeyFromSeed(seed[:])
	did := awr.DIDKey(key.Public().(ed25519.PublicKey))
	o := &observer{t: t, key: key, did: did, origin: name + ".example/log", at: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	l, err := hlog.Open(context.Background(), hlog.Config{Dir: t.TempDir(), Origin: o.origin, Key: key, DID: did,
		Now: func() time.Time { return o.at }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	o.log = l
	return o
}

// observe appends an observation label of server at endpoint whose tools have one tool
// described by desc, and pad other entries after it; it returns the server id and digest.
func (o *observer) observe(server, endpoint, desc string, pad int) (id, digest string) {
	o.t.Helper()
	tools := []any{map[string]any{"name": "t", "description": desc, "inputSchema": map[string]any{}}}
	d, _, err := mtl.Build(mtl.Server{Name: server, Registry: "urn:awr:mtl:1:registry:test"}, tools, mtl.Artifact{Transport: "streamable-http", Endpoint: endpoint})
	if err != nil {
		o.t.Fatal(err)
	}
	descJCS, err := d.JCS()
	if err != nil {
		o.t.Fatal(err)
	}
	sri, urn, err := d.Subject()
	if err != nil {
		o.t.Fatal(err)
	}
	o.at = o.at.Add(time.Minute)
	o.n++
	in := awr.LabelInput{ID: fmt.Sprintf("urn:uuid:00000000-0000-4000-8000-%012x", o.n), ObservedAt: o.at, IssuedAt: o.at,
		Subject: awr.Ref{ID: urn, DigestSRI: sri}, ToolSet: awr.ToolSet{Count: 1, DigestSRI: d.ToolSet.DigestSRI},
		Server: awr.Server{Name: server, Registry: "urn:awr:mtl:1:registry:test"}}
	label, err := awr.IssueLabel(awr.MethodObservation, in, o.key)
	if err != nil {
		o.t.Fatal(err)
	}
	entries := []hlog.Entry{{ID: in.ID, Label: label}}
	for range pad {
		o.n++
		id := fmt.Sprintf("urn:uuid:00000000-0000-4000-8000-%012x", o.n)
		entries = append(entries, hlog.Entry{ID: id, Label: fmt.Appendf(nil, `{"id":%q,"n":%d,"pad":%q}`, id, o.n, strings.Repeat("x", o.padBytes))})
	}
	if _, err := o.log.Append(context.Background(), entries, []hlog.Evidence{{Kind: hlog.EvidenceDescriptors, Body: descJCS}}); err != nil {
		o.t.Fatal(err)
	}
	if o.descs == nil {
		o.descs = map[string]string{}
	}
	o.descs[mtl.ServerID(server, endpoint)] = sri
	return mtl.ServerID(server, endpoint), d.ToolSet.DigestSRI
}

// logSource serves a real log as a mirror Source, the way the node's /log/ routes do.
type logSource struct {
	name string
	log  *hlog.Log
}

func (s *logSource) Name() string { return s.name }

func (s *logSource) Get(_ context.Context, path string, max int) ([]byte, error) {
	var body []byte
	var err error
	if path == "checkpoint" {
		body = s.log.Latest().Checkpoint
	} else {
		t, perr := torchwood.ParseTilePath(path)
		if perr != nil {
			return nil, perr
		}
		if t.L == -1 {
			body, err = s.log.EntryBundle(uint64(t.N), t.W)
		} else {
			body, err = s.log.HashTile(uint64(t.L), uint64(t.N), t.W)
		}
	}
	if errors.Is(err, hlog.ErrNotFound) {
		return nil, fmt.Errorf("%s: %w", path, mirror.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return mirror.ReadBounded(strings.NewReader(string(body)), max)
}

func (s *logSource) Evidence(_ context.Context, sri string, max int) ([]byte, error) {
	b, err := s.log.Evidence(hlog.EvidenceDescriptors, sri)
	if errors.Is(err, hlog.ErrNotFound) {
		return nil, mirror.ErrNotFound
	}
	return b, err
}

// storeSource serves another Store's mirror of an observer, as a node that mirrors it does.
type storeSource struct {
	s   *mirror.Store
	did string
}

func (s *storeSource) Name() string { return "mirror of " + s.did }

func (s *storeSource) Get(_ context.Context, path string, max int) ([]byte, error) {
	if path == "checkpoint" {
		if c := s.s.Checkpoint(s.did); c != nil {
			return c, nil
		}
		return nil, mirror.ErrNotFound
	}
	return s.s.Tile(s.did, path)
}

func (s *storeSource) Evidence(_ context.Context, sri string, max int) ([]byte, error) {
	return s.s.Evidence(sri)
}

func openStore(t testing.TB, dir string, cfg mirror.Config) *mirror.Store {
	t.Helper()
	cfg.Dir = dir
	s, err := mirror.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
