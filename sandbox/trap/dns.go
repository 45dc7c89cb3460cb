package trap

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsTTL is short: a run is minutes long and nothing should cache it.
const dnsTTL = 60

// serveDNS answers the UDP DNS trap until the socket closes.
func (n *Network) serveDNS() {
	buf := make([]byte, 4096)
	for {
		k, from, err := n.udp.ReadFromUDPAddrPort(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		if resp, ok := n.answerDNS(buf[:k]); ok {
			n.udp.WriteToUDPAddrPort(resp, from)
		}
	}
}

// serveDNSOverTCP answers length-prefixed queries on a TCP connection to
// port 53, at most 16.
func (n *Network) serveDNSOverTCP(p *peer) {
	var size [2]byte
	for range 16 {
		if _, err := io.ReadFull(p.br, size[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(size[:]))
		if _, err := io.ReadFull(p.br, q); err != nil {
			return
		}
		resp, ok := n.answerDNS(q)
		if !ok {
			return
		}
		p.conn.Write(binary.BigEndian.AppendUint16(nil, uint16(len(resp))))
		p.conn.Write(resp)
	}
}

// answerDNS records the first question of a query and answers it: an A
// question of class IN with the trap address, anything else with an empty
// NOERROR (so resolvers fall back to A). Not a query, or unparsable: no
// answer and no record.
func (n *Network) answerDNS(query []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil || h.Response || h.OpCode != 0 {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	name := printable([]byte(strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")))
	rec := Record{Protocol: "dns", Host: name, QType: strings.TrimPrefix(q.Type.String(), "Type"), Port: 53}
	// A name can carry a stolen value in its labels: DNS is an exfiltration
	// channel of its own.
	for _, u := range FindCanaries([]byte(name)) {
		u.Where = "dns " + name
		rec.Canaries = append(rec.Canaries, u)
	}
	n.add(rec)
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{
		ID: h.ID, Response: true, Authoritative: true,
		RecursionDesired: h.RecursionDesired, RecursionAvailable: true,
	})
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	if q.Type == dnsmessage.TypeA && q.Class == dnsmessage.ClassINET {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: dnsTTL}
		if b.AResource(rh, dnsmessage.AResource{A: n.trapAddr.As4()}) != nil {
			return nil, false
		}
	}
	out, err := b.Finish()
	return out, err == nil
}
