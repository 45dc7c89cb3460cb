// Package stdio is the sandbox's MCP client over a server's standard input
// and output: newline-delimited JSON-RPC, exactly as HISTOR's observer
// speaks it. It sends initialize (protocol 2025-06-18, no client
// capabilities, clientInfo histor-sandbox), notifications/initialized and
// paged tools/list, then calls up to 15 tools once each with canary
// arguments built from their input schemas.
//
// The server is a stranger's program, so everything is bounded: one
// deadline for the whole session and one each for initialize and every
// call, the bytes read from stdout, one line, the pages and the tools.
// Requests the server sends are declined (roots/list gets an empty list,
// anything else method-not-found); lines that are not JSON are skipped (a
// server that logs to stdout). Whatever the server does ends as a
// sandbox.Status in the Result, never as an error or a panic out of Talk.
//
// Messages are parsed by log/canon with refused numbers deferred, as
// crawl/mcpclient parses them, so the MTL/1 digest of Result.Tools is the
// one the crawler computes for the same tools.
package stdio

import (
	"io"
	"log/slog"
	"time"

	"github.com/histor-observer/histor/sandbox"
)

// ProtocolVersion is what initialize asks for (HISTOR's observer sends the same).
const ProtocolVersion = "2025-06-18"

// ClientName is clientInfo.name. It is fixed: some servers change their
// tool set on clientInfo, so every run must present the same one.
const ClientName = "histor-sandbox"

// Config holds the client's bounds. Zero fields take the defaults named on them.
type Config struct {
	// InitTimeout bounds the wait for initialize's answer (default 45 s).
	InitTimeout time.Duration
	// SessionTimeout bounds the whole session, from Run.Started to the last
	// call's answer (default 150 s).
	SessionTimeout time.Duration
	// CallTimeout bounds each tools/call (default 8 s); the next call is still made.
	CallTimeout time.Duration
	// MaxCalls is how many tools are called, the first ones listed (default
	// 15; negative: none, the listing only).
	MaxCalls int
	// MaxPages bounds tools/list pages (default 64).
	MaxPages int
	// MaxTools bounds the tools listed (default 4096).
	MaxTools int
	// MaxOutputBytes bounds everything read from stdout (default 16 MiB).
	MaxOutputBytes int64
	// MaxLineBytes bounds one stdout line, hence one message (default 8 MiB).
	MaxLineBytes int
	// MaxJSONDepth bounds the nesting of one message (default 64, crawl/mcpclient's).
	MaxJSONDepth int
	// MaxAnswerBytes bounds each kept call answer, text and JSON each (default 64 KiB).
	MaxAnswerBytes int
	// ClientVersion is clientInfo.version (default "dev").
	ClientVersion string
	// Logger receives a debug line per session; nil discards it.
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultInitTimeout    = 45 * time.Second
	DefaultSessionTimeout = 150 * time.Second
	DefaultCallTimeout    = 8 * time.Second
	DefaultMaxCalls       = 15
	DefaultMaxPages       = 64
	DefaultMaxTools       = 4096
	DefaultMaxOutputBytes = 16 << 20
	DefaultMaxLineBytes   = 8 << 20
	DefaultMaxJSONDepth   = 64
	DefaultMaxAnswerBytes = 64 << 10
)

func (c Config) withDefaults() Config {
	dur := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	num := func(n *int, def int) {
		if *n <= 0 {
			*n = def
		}
	}
	dur(&c.InitTimeout, DefaultInitTimeout)
	dur(&c.SessionTimeout, DefaultSessionTimeout)
	dur(&c.CallTimeout, DefaultCallTimeout)
	if c.MaxCalls == 0 {
		c.MaxCalls = DefaultMaxCalls
	}
	num(&c.MaxPages, DefaultMaxPages)
	num(&c.MaxTools, DefaultMaxTools)
	num(&c.MaxLineBytes, DefaultMaxLineBytes)
	num(&c.MaxJSONDepth, DefaultMaxJSONDepth)
	num(&c.MaxAnswerBytes, DefaultMaxAnswerBytes)
	if c.MaxOutputBytes <= 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.ClientVersion == "" {
		c.ClientVersion = "dev"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Run is one server to talk to.
type Run struct {
	// Stdin is the server's standard input, Stdout its standard output.
	// Talk never closes either: the caller ends the server afterwards,
	// which also ends the goroutines still blocked on them.
	Stdin  io.Writer
	Stdout io.Reader
	// Started is when the server was started; the session deadline counts
	// from it (zero: when Talk is called).
	Started time.Time
	// Canary makes the call arguments.
	Canary Canary
}

// Result is what one session produced.
type Result struct {
	Status sandbox.Status // ok, exited, timeout, protocol, too-large, too-many-tools, too-many-pages; inspection-failed if the caller cancelled
	Detail string         // why, for a status other than ok; the caller adds the server's stderr

	// ServerInfo is initialize's serverInfo as sent, nil if none was an object.
	ServerInfo      map[string]any
	ProtocolVersion string // at most 40 bytes
	// Tools are the tools exactly as sent, parsed by log/canon with refused
	// numbers kept as canon.RefusedNumber (so log/mtl reports MTL-NUM-001).
	// Nil unless Status is ok.
	Tools []any
	Pages int

	Calls   sandbox.Coverage
	Answers []Answer // one per call attempted, in call order

	// Started is the session's start, Listed when tools/list was fully
	// answered (zero if it never was): the boundary between the startup
	// and calls phases. Ended is when Talk returned.
	Started, Listed, Ended time.Time
	BytesRead              int64 // from stdout
}

// Answer is what one tools/call answered, kept for the placeholder scan.
type Answer struct {
	Tool string
	// Text is the text of the answer's text content, joined by newlines.
	Text string
	// JSON is the whole result (or error) object in RFC 8785 form, which
	// leaves every string unescaped except quotes, backslashes and control
	// characters.
	JSON      string
	Truncated bool // Text or JSON was cut at Config.MaxAnswerBytes
}
