package trap

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// connLifetime bounds one trap connection whatever its reads do.
const connLifetime = 60 * time.Second

// serveTCP accepts redirected connections and hands each to a handler, at
// most Handlers at once; one beyond that is recorded and closed at once, so
// a flood costs a record each, not a goroutine each.
func (n *Network) serveTCP() {
	for {
		c, err := n.tcp.AcceptTCP()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			n.pool.log.Warn("trap accept failed", "id", n.id, "err", err)
			time.Sleep(10 * time.Millisecond) // EMFILE and friends: do not spin
			continue
		}
		dst, err := originalDst(c)
		if err != nil {
			n.pool.log.Warn("trap original destination unknown", "id", n.id, "err", err)
			dst = netip.AddrPortFrom(n.trapAddr, trapPort)
		}
		select {
		case n.slots <- struct{}{}:
		default:
			n.pool.metrics.overloaded.Inc()
			n.add(Record{Protocol: "tcp", Address: dst.Addr().String(), Port: int(dst.Port()), Incomplete: "overloaded"})
			c.Close()
			continue
		}
		if !n.track(c) {
			<-n.slots
			c.Close()
			return
		}
		n.wg.Add(1)
		go n.handle(c, dst)
	}
}

func (n *Network) handle(c *net.TCPConn, dst netip.AddrPort) {
	defer n.wg.Done()
	defer func() { <-n.slots }()
	defer n.untrack(c)
	defer c.Close()
	busy := n.busy.Add(1)
	defer n.busy.Add(-1)
	for peak := n.peak.Load(); busy > peak && !n.peak.CompareAndSwap(peak, busy); peak = n.peak.Load() {
	}
	n.pool.metrics.handlers.Inc()
	defer n.pool.metrics.handlers.Dec()

	p := newPeer(c, dst, n.pool.cfg.SocketTimeout)
	switch dst.Port() {
	case 80:
		n.serveHTTP(p, "http")
	case 443:
		n.serveTLS(p, func(p *peer) { n.serveHTTP(p, "https") })
	case 25, 587:
		n.serveSMTP(p)
	case 465:
		n.serveTLS(p, n.serveSMTP)
	case 53:
		n.serveDNSOverTCP(p)
	default:
		n.sniff(p)
	}
}

// sniff serves an unknown port by its first bytes: a TLS handshake gets
// HTTPS, an HTTP request line gets HTTP, anything else is recorded raw.
func (n *Network) sniff(p *peer) {
	first, err := p.br.Peek(1)
	if err != nil {
		n.serveRaw(p)
		return
	}
	switch {
	case first[0] == 0x16:
		n.serveTLS(p, func(p *peer) { n.serveHTTP(p, "https") })
	case looksLikeHTTP(p.br):
		n.serveHTTP(p, "http")
	default:
		n.serveRaw(p)
	}
}

var httpMethods = []string{"GET ", "POST ", "PUT ", "PATCH ", "DELETE ", "HEAD ", "OPTIONS ", "CONNECT "}

func looksLikeHTTP(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	for _, m := range httpMethods {
		if len(b) >= len(m) && string(b[:len(m)]) == m {
			return true
		}
	}
	return false
}

// peer is one trap connection: its conn (plain or TLS), a buffered reader
// over it, where it was going and, after TLS, the SNI it asked for.
type peer struct {
	conn net.Conn
	br   *bufio.Reader
	dst  netip.AddrPort
	sni  string
}

func newPeer(c net.Conn, dst netip.AddrPort, timeout time.Duration) *peer {
	dc := &deadlineConn{Conn: c, timeout: timeout, end: time.Now().Add(connLifetime)}
	return &peer{conn: dc, br: bufio.NewReaderSize(dc, 4096), dst: dst}
}

// record starts a record about p.
func (p *peer) record(protocol string) Record {
	return Record{Protocol: protocol, Address: p.dst.Addr().String(), Port: int(p.dst.Port()), SNI: p.sni, Host: p.sni}
}

// serveTLS completes a handshake with a leaf minted for the SNI (or the
// original address when there is none) and serves next over it. A refused
// handshake is still a record: the SNI says where the package was going.
func (n *Network) serveTLS(p *peer, next func(*peer)) {
	sni := ""
	cfg := &tls.Config{
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
			sni = clip(h.ServerName)
			name := h.ServerName
			if name == "" {
				name = p.dst.Addr().String()
			}
			return n.pool.ca.leaf(name)
		},
	}
	tc := tls.Server(&bufferedConn{Conn: p.conn, r: p.br}, cfg)
	if err := tc.Handshake(); err != nil {
		p.sni = sni
		r := p.record("https")
		if p.dst.Port() == 465 {
			r.Protocol = "smtp"
		}
		r.Incomplete = "tls-handshake"
		n.add(r)
		return
	}
	next(&peer{conn: tc, br: bufio.NewReaderSize(tc, 4096), dst: p.dst, sni: sni})
}

// serveRaw records the first bytes of a connection nobody here speaks:
// until EOF, PayloadCap or the socket timeout.
func (n *Network) serveRaw(p *peer) {
	r := p.record("tcp")
	body, truncated, err := readCapped(p.br)
	if err != nil && !isTimeout(err) && !errors.Is(err, io.EOF) {
		r.Incomplete = "unparsed"
	}
	r.Truncated = truncated
	if truncated {
		r.Incomplete = "too-large"
	}
	n.addPayload(r, body, int64(len(body)), body)
}

// readCapped reads until EOF or error, keeping at most PayloadCap bytes.
func readCapped(r io.Reader) ([]byte, bool, error) {
	body, err := io.ReadAll(io.LimitReader(r, PayloadCap+1))
	if len(body) > PayloadCap {
		return body[:PayloadCap], true, err
	}
	if isTimeout(err) && len(body) > 0 {
		err = nil // the peer went quiet waiting for an answer: what it sent is whole enough
	}
	return body, false, err
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// originalDst is where a redirected connection was going (SO_ORIGINAL_DST).
func originalDst(c *net.TCPConn) (netip.AddrPort, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var addr netip.AddrPort
	var serr error
	err = raw.Control(func(fd uintptr) {
		// The kernel fills a sockaddr_in; IPv6Mreq is a 20-byte buffer
		// that holds it, the usual way to read this option from Go.
		m, e := unix.GetsockoptIPv6Mreq(int(fd), syscall.SOL_IP, unix.SO_ORIGINAL_DST)
		if e != nil {
			serr = e
			return
		}
		port := uint16(m.Multiaddr[2])<<8 | uint16(m.Multiaddr[3])
		addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte(m.Multiaddr[4:8])), port)
	})
	if err == nil {
		err = serr
	}
	return addr, err
}

// deadlineConn gives every read and write the socket timeout, never past
// the connection's end.
type deadlineConn struct {
	net.Conn
	timeout time.Duration
	end     time.Time
}

func (c *deadlineConn) deadline() time.Time {
	d := time.Now().Add(c.timeout)
	if d.After(c.end) {
		return c.end
	}
	return d
}

func (c *deadlineConn) Read(b []byte) (int, error) {
	c.Conn.SetReadDeadline(c.deadline())
	return c.Conn.Read(b)
}

func (c *deadlineConn) Write(b []byte) (int, error) {
	c.Conn.SetWriteDeadline(c.deadline())
	return c.Conn.Write(b)
}

// bufferedConn reads through r, which may hold bytes already peeked.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }
