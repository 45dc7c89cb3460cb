package trap

import (
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// bareNetwork is a Network with its records and nothing else: enough for
// the parsers.
func bareNetwork(t testing.TB) *Network {
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddr("10.231.0.1")
	return &Network{pool: &Pool{metrics: m}, trapAddr: addr, store: newStore(100, addr)}
}

func TestAnswerDNSRefuses(t *testing.T) {
	n := bareNetwork(t)
	response, _ := (&dnsmessage.Message{Header: dnsmessage.Header{Response: true},
		Questions: []dnsmessage.Question{{Name: dnsmessage.MustNewName("x."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}}}).Pack()
	for name, q := range map[string][]byte{"empty": nil, "short": {1, 2, 3}, "no question": make([]byte, 12), "a response": response} {
		if _, ok := n.answerDNS(q); ok {
			t.Errorf("%s: answered", name)
		}
	}
	if recs, _ := n.Records(); len(recs) != 0 {
		t.Errorf("records %+v", recs)
	}
}

func FuzzAnswerDNS(f *testing.F) {
	q, _ := (&dnsmessage.Message{Header: dnsmessage.Header{ID: 1},
		Questions: []dnsmessage.Question{{Name: dnsmessage.MustNewName("a.example."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}}}).Pack()
	f.Add(q)
	n := bareNetwork(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		out, ok := n.answerDNS(b)
		if !ok {
			return
		}
		var m dnsmessage.Message
		if err := m.Unpack(out); err != nil || !m.Response || len(m.Answers) > 1 || len(out) > 512 {
			t.Fatalf("answer %x: %v", out, err)
		}
	})
}

func TestRecipients(t *testing.T) {
	tests := []struct {
		name, body, ctype, query string
		want                     []string
	}{
		{"json nested", `{"message":{"to":[{"email":"a@x.org"}],"from":"f@x.org"}}`, "application/json", "", []string{"a@x.org"}},
		{"json keys any case", `{"Destinations":["b@x.org"],"BCC":"c@x.org, d@x.org"}`, "application/json", "", []string{"b@x.org", "c@x.org", "d@x.org"}},
		{"not recipients", `{"from":"f@x.org","text":"mail me@x.org"}`, "application/json", "", nil},
		{"form", "to=e%40x.org&subject=hi", "application/x-www-form-urlencoded", "", []string{"e@x.org"}},
		{"query", "", "", "recipient=g@x.org", []string{"g@x.org"}},
		{"broken json", `{"to":"h@x.org"`, "application/json", "", nil},
	}
	for _, tt := range tests {
		u, _ := url.Parse("http://x/?" + tt.query)
		req := &http.Request{URL: u, Header: http.Header{"Content-Type": {tt.ctype}}}
		if got := requestRecipients(req, []byte(tt.body)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestAttributionNeverGuesses(t *testing.T) {
	n := bareNetwork(t)
	n.store.add(Record{Protocol: "dns", Host: "one.example"})
	n.store.add(Record{Protocol: "dns", Host: "two.example"})
	n.store.add(Record{Protocol: "tcp", Address: "10.231.0.1", Port: 4444})
	recs, _ := n.Records()
	if recs[2].Host != "" {
		t.Errorf("attributed to %q with two names looked up", recs[2].Host)
	}
}
