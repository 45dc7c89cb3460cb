package trap

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// SMTP bounds: commands per session, bytes per line, bytes read for one
// message before giving up on it (what is kept stays PayloadCap).
const (
	smtpCommands = 100
	smtpLine     = 8192
	smtpDrain    = 4 * PayloadCap
)

var errLineTooLong = errors.New("line too long")

// serveSMTP plays a minimal mail server: it accepts every sender, recipient
// and message synthetically, and refuses AUTH, STARTTLS and everything else
// with 502. One record per session: recipients, sender, the messages.
func (n *Network) serveSMTP(p *peer) {
	s := &smtpSession{p: p, r: p.record("smtp"), rcpts: map[string]bool{}}
	s.reply("220 histor-trap.invalid ESMTP synthetic")
	quit := s.run()
	s.r.Recipients = boundedRecipients(s.rcpts)
	// Recorded before the goodbye, so a client that saw it can rely on it.
	n.addPayload(s.r, s.data.Bytes(), s.size, append(s.scan.Bytes(), s.data.Bytes()...))
	if quit {
		s.reply("221 bye")
	}
}

type smtpSession struct {
	p     *peer
	r     Record
	rcpts map[string]bool
	data  bytes.Buffer // message bytes kept, at most PayloadCap
	size  int64        // message bytes received
	scan  bytes.Buffer // command lines (and decoded AUTH arguments), at most PayloadCap
}

func (s *smtpSession) reply(line string) { fmt.Fprintf(s.p.conn, "%s\r\n", line) }

// run plays the dialogue; true when it ended with QUIT.
func (s *smtpSession) run() bool {
	for range smtpCommands {
		line, err := readLine(s.p.br, smtpLine)
		if err != nil {
			s.fail(err)
			return false
		}
		s.keepScan(line)
		verb, arg, _ := strings.Cut(strings.TrimRight(string(line), "\r\n"), " ")
		switch strings.ToUpper(verb) {
		case "EHLO", "HELO":
			s.reply("250 histor-trap.invalid")
		case "MAIL":
			if e := emailPattern.FindString(arg); e != "" && s.r.From == "" {
				s.r.From = clip(strings.TrimPrefix(e, "FROM:<"))
			}
			s.reply("250 OK")
		case "RCPT":
			for _, e := range emailPattern.FindAllString(arg, maxRecipients) {
				s.rcpts[strings.TrimPrefix(strings.TrimPrefix(e, "TO:<"), "to:<")] = true
			}
			s.reply("250 OK")
		case "DATA":
			s.reply("354 end with <CRLF>.<CRLF>")
			if !s.readData() {
				return false
			}
		case "RSET", "NOOP":
			s.reply("250 OK")
		case "QUIT":
			return true
		default:
			// AUTH and STARTTLS included: unsupported, and the run is told so.
			s.r.Incomplete = "unsupported-command"
			s.decodeArgs(line)
			s.reply("502 command not implemented")
		}
	}
	return false
}

// readData reads one message to its final dot. False when the session ends
// before it.
func (s *smtpSession) readData() bool {
	var read int64
	for read <= smtpDrain {
		line, err := readLine(s.p.br, smtpLine)
		if err != nil {
			s.fail(err)
			return false
		}
		read += int64(len(line))
		if t := strings.TrimRight(string(line), "\r\n"); t == "." {
			if s.r.Truncated {
				s.reply("552 message too large")
			} else {
				s.reply("250 queued synthetically")
			}
			return true
		}
		line = bytes.TrimPrefix(line, []byte(".")) // dot-stuffing
		s.size += int64(len(line))
		if room := PayloadCap - s.data.Len(); room < len(line) {
			s.data.Write(line[:room])
			s.r.Truncated, s.r.Incomplete = true, "too-large"
		} else {
			s.data.Write(line)
		}
	}
	s.r.Truncated, s.r.Incomplete = true, "too-large"
	return false
}

func (s *smtpSession) fail(err error) {
	switch {
	case isTimeout(err):
		s.r.Incomplete = "timeout"
	case errors.Is(err, errLineTooLong):
		s.r.Incomplete = "unparsed"
	}
}

func (s *smtpSession) keepScan(b []byte) {
	if room := PayloadCap - s.scan.Len(); room > 0 {
		s.scan.Write(b[:min(room, len(b))])
	}
}

// decodeArgs adds the base64 decoding of each field of an unsupported
// command line (AUTH PLAIN carries credentials so) to what is scanned.
func (s *smtpSession) decodeArgs(line []byte) {
	for _, f := range strings.Fields(string(line)) {
		if b, err := base64.StdEncoding.DecodeString(f); err == nil {
			s.keepScan(append(b, '\n'))
		}
	}
}

// readLine reads one line of at most max bytes, newline included.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			return nil, errLineTooLong
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}
