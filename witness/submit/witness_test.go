package submit_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/promset/promtest"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/witness/submit"
)

func TestParseWitness(t *testing.T) {
	vk := newTestWitness(1).vkey(t)
	for _, tc := range []struct {
		in, url string
	}{
		{"https://w.test/prefix=" + vk, "https://w.test/prefix"},
		{"https://w.test/prefix/=" + vk, "https://w.test/prefix"},
		{"http://127.0.0.1:7380=" + vk, "http://127.0.0.1:7380"},
		{"https://w.test/a=b/c=" + vk, "https://w.test/a=b/c"},
	} {
		w, err := submit.ParseWitness(tc.in)
		if err != nil || w.URL != tc.url || w.Cosigner.Name != "w1.test/witness" {
			t.Errorf("ParseWitness(%q) = %+v, %v", tc.in, w, err)
		}
	}
	logKey := logVKey(t)
	for _, in := range []string{
		"",
		vk,
		"https://w.test/=",
		"https://w.test/=" + logKey,
		"https://w.test/=" + vk + "x",
		"w.test/prefix=" + vk,
		"ftp://w.test/=" + vk,
		"https:///path=" + vk,
		"https://user@w.test/=" + vk,
		"https://w.test/?q=1=" + vk,
		"https://w.test/?=" + vk,
		"https://w.test/#frag=" + vk,
		"mailto:x@w.test=" + vk,
		"https://w.test/ =" + vk,
	} {
		if w, err := submit.ParseWitness(in); err == nil {
			t.Errorf("ParseWitness(%q) accepted %+v", in, w)
		}
	}
}

func TestParseWitnessesRefusesDuplicates(t *testing.T) {
	a, b := newTestWitness(1).vkey(t), newTestWitness(2).vkey(t)
	if ws, err := submit.ParseWitnesses([]string{"https://a.test=" + a, "https://b.test=" + b}); err != nil || len(ws) != 2 {
		t.Fatalf("two witnesses: %v, %v", ws, err)
	}
	for _, specs := range [][]string{
		{"https://a.test=" + a, "https://b.test=" + a},  // one key
		{"https://a.test=" + a, "https://a.test/=" + b}, // one URL
	} {
		if _, err := submit.ParseWitnesses(specs); err == nil {
			t.Errorf("accepted %q", specs)
		}
	}
}

func TestPolicyWitnesses(t *testing.T) {
	p, err := format.ParsePolicy([]byte("witness a " + newTestWitness(1).vkey(t) + " https://a.test/sub/\n" +
		"witness b " + newTestWitness(2).vkey(t) + "\ngroup g any a b\nquorum g\n"))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := submit.PolicyWitnesses(p)
	if err != nil || len(ws) != 1 || ws[0].URL != "https://a.test/sub" || ws[0].Cosigner.Name != "w1.test/witness" {
		t.Fatalf("PolicyWitnesses = %+v, %v", ws, err)
	}
}

func TestNewRefuses(t *testing.T) {
	good := submit.Config{Origin: testOrigin, Key: logPub(), Proof: newTestLog(t, 0).proof}
	for _, tc := range []struct {
		name string
		edit func(*submit.Config)
	}{
		{"no proof", func(c *submit.Config) { c.Proof = nil }},
		{"bad origin", func(c *submit.Config) { c.Origin = "a b" }},
		{"short key", func(c *submit.Config) { c.Key = c.Key[:31] }},
		{"negative timeout", func(c *submit.Config) { c.Timeout = -1 }},
		{"max backoff below backoff", func(c *submit.Config) { c.Backoff, c.MaxBackoff = 2, 1 }},
		{"duplicate witnesses", func(c *submit.Config) {
			w := newTestWitness(1).witness(t, "https://a.test")
			c.Witnesses = []submit.Witness{w, w}
		}},
	} {
		cfg := good
		tc.edit(&cfg)
		if s, err := submit.New(cfg); err == nil {
			s.Close()
			t.Errorf("%s: accepted", tc.name)
		}
	}
	s, err := submit.New(good)
	if err != nil {
		t.Fatal(err)
	}
	if s.Latest() != nil || s.Witnessed() != nil {
		t.Error("a new Submitter has a checkpoint")
	}
}

// TestMetrics: the series exist from the start and count what happened; Close
// unregisters them, so a second Submitter can register on the same registry.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, 2, func(c *submit.Config) { c.Registerer = reg })
	e.witnesses[1].push(status(403, "", "text/plain"))
	e.submit(4)
	all := promtest.Series(t, reg)
	for series, want := range map[string]float64{
		`histor_witness_submit_requests_total{code="200",witness="w0.test/witness"}`: 1,
		`histor_witness_submit_requests_total{code="403",witness="w1.test/witness"}`: 1,
		`histor_witness_submit_acknowledged_size{witness="w0.test/witness"}`:         4,
		`histor_witness_submit_acknowledged_size{witness="w1.test/witness"}`:         0,
		`histor_witness_submit_inconsistencies_total{witness="w1.test/witness"}`:     0,
		`histor_witness_submit_latest_size`:                                          4,
		`histor_witness_submit_latest_cosignatures`:                                  1,
		`histor_witness_submit_seconds{result="cosigned",witness="w0.test/witness"}`: 1, // observations
		`histor_witness_submit_seconds{result="refused",witness="w1.test/witness"}`:  1,
	} {
		if got, ok := all[series]; !ok || got != want {
			t.Errorf("%s = %v (there: %v), want %v", series, got, ok, want)
		}
	}
	e.sub.Close()
	if _, err := submit.New(submit.Config{Origin: testOrigin, Key: logPub(), Proof: e.log.proof, Registerer: reg}); err != nil {
		t.Errorf("registering again after Close: %v", err)
	}
}

// TestLoopback runs the Submitter against witnesses on real loopback sockets with its own
// HTTP client: the log grows, each witness cosigns each checkpoint over a kept-alive
// connection, and one holding a fork refuses and is reported.
func TestLoopback(t *testing.T) {
	lg := newTestLog(t, 0)
	var ws []*testWitness
	cfg := submit.Config{Origin: testOrigin, Key: logPub(), Proof: lg.proof}
	var conns atomic.Int32 // connections opened, over all three witnesses
	for i := range 3 {
		w := newTestWitness(i)
		srv := httptest.NewUnstartedServer(w)
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		t.Cleanup(srv.Close)
		ws = append(ws, w)
		cfg.Witnesses = append(cfg.Witnesses, w.witness(t, srv.URL+"/"))
	}
	ws[2].setState(newTestLog(t, 5).grow(2).head())
	s, err := submit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for round := 1; round <= 5; round++ {
		lg.grow(round * 7)
		res, err := s.Submit(context.Background(), lg.checkpoint())
		var inc *submit.InconsistencyError
		if !errors.As(err, &inc) || inc.Witness != ws[2].name {
			t.Fatalf("round %d: err = %v", round, err)
		}
		if got := openCosigned(t, res.Note, ws); !slices.Equal(got, []string{ws[0].name, ws[1].name}) {
			t.Errorf("round %d: cosigned by %v", round, got)
		}
	}
	if size, _ := ws[0].state(); size != uint64(lg.n) {
		t.Errorf("witness at size %d, log at %d", size, lg.n)
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections for 3 witnesses: keep-alive not used", n)
	}
}

func FuzzParseWitness(f *testing.F) {
	vk := newTestWitness(1).vkey(f)
	f.Add("https://w.test/prefix=" + vk)
	f.Add("http://127.0.0.1:7380/=" + vk)
	f.Add("https://w.test/a=b/c?d#e=" + vk)
	f.Add("https://w.test//=" + vk)
	f.Fuzz(func(t *testing.T, s string) {
		w, err := submit.ParseWitness(s)
		if err != nil {
			return
		}
		// What parses is its URL (less a final slash), "=", and a vkey.
		vkey := s[strings.LastIndexByte(s, '=')+1:]
		if s != w.URL+"="+vkey && s != w.URL+"/="+vkey {
			t.Fatalf("%q parsed as %q", s, w.URL)
		}
		again, err := submit.ParseWitness(w.URL + "=" + vkey)
		if err != nil || again.URL != w.URL || again.Cosigner.Name != w.Cosigner.Name {
			t.Fatalf("round trip of %q: %+v, %v", s, again, err)
		}
	})
}
