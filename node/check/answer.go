package check

import (
	"cmp"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/histor-observer/histor/internal/httpx"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/node/catalog"
)

// What /check says a client's tool set is, HISTOR's match values.
const (
	matchSame         = "same"
	matchDifferent    = "different"
	matchPrevious     = "previously-observed"
	matchNotObserved  = "not-observed"
	matchNotListed    = "not-listed"
	matchNoDigest     = "no-digest"
	matchUndigestible = "undigestible"
)

// checkNotes explain each match. They say what was observed, never what a
// server is worth.
var checkNotes = map[string]string{
	matchNotListed:   "This observer has no record of this endpoint or name in the registry it reads.",
	matchNotObserved: "This observer lists this endpoint but has not retrieved its tool definitions (see target.lastStatus).",
	matchSame:        "The tool definitions you sent are the set this observer currently observes at this endpoint.",
	matchPrevious:    "The tool definitions you sent match a set this observer observed at this endpoint earlier (see seenBefore), not the current one.",
	matchDifferent: "The tool definitions you sent differ from every set this observer has observed at this endpoint. " +
		"Possible causes: the server changed after the last observation, its definitions vary per account, " +
		"or it shows different clients different definitions. Read the definitions again before you rely on them.",
	matchNoDigest: "No tool set was sent, so only this observer's own observations are reported.",
	matchUndigestible: "The tools you sent cannot be digested under MTL/1 (see query.digestError), so they cannot be " +
		"compared with this observer's record; its own observations are reported.",
}

// Sentences added to a note about a target that is delisted or whose latest
// attempt failed.
const (
	noteDelisted      = " This endpoint is no longer listed in the registry."
	noteDelistedOn    = " This endpoint is no longer listed in the registry; the record stops at %s."
	noteLatestFailed  = " The latest attempt at this endpoint produced no tool set (%s); the comparison is with the last successful observation."
	checkTimeLayout   = "2006-01-02T15:04:05Z" // HISTOR's: UTC, whole seconds
	checkDayLayout    = "2006-01-02"
	checkSignatureAlg = "Ed25519"
)

// Answer builds, signs and encodes the answer to q from client: the
// histor.check/v1 document in its canonical form. Only a failure to read
// the node's own records is an error.
func (c *Checker) Answer(q *Query, client httpx.ClientKey) ([]byte, error) {
	now := c.now().UTC()
	t, err := c.findTarget(q)
	if err != nil {
		return nil, err
	}
	d := answerDoc{q: q, t: t, now: now, match: matchNotListed, head: c.log.Latest()}
	if t != nil {
		if d.match, d.seen, err = c.match(q, t); err != nil {
			return nil, err
		}
		d.contributed = c.contribute(q, t, client, now)
		if c.view != nil {
			if d.observers, d.agreement, err = c.view(t.ID); err != nil {
				return nil, fmt.Errorf("reading the peer view: %w", err)
			}
		}
	}
	d.scan = c.patternScan(q, t, client)
	return c.sign(&d)
}

// answerDoc is what one answer says, gathered before it is written.
type answerDoc struct {
	q           *Query
	t           *Target // nil: not listed
	now         time.Time
	match       string
	seen        *SeenBefore // an earlier set matched
	contributed bool
	scan        []byte // the patternScan member in canonical form; nil: none
	head        hlog.Head
	// observers and agreement are the peer view of the target (node/peers'
	// Members); nil: no view.
	observers []any
	agreement map[string]any
}

// findTarget picks the target a query names, as HISTOR does: by endpoint
// when one is sent, else by name; a listed target before a delisted one,
// then by name (or endpoint) order. nil when none is known.
func (c *Checker) findTarget(q *Query) (*Target, error) {
	var ts []Target
	var err error
	if q.endpoint != "" {
		ts, err = c.targets.TargetsByEndpoint(catalog.NormalizeEndpoint(q.endpoint))
	} else {
		ts, err = c.targets.TargetsByName(q.name)
	}
	if err != nil || len(ts) == 0 {
		return nil, err
	}
	byEndpoint := q.endpoint != ""
	slices.SortFunc(ts, func(a, b Target) int {
		if a.Delisted != b.Delisted {
			if a.Delisted {
				return 1
			}
			return -1
		}
		if byEndpoint {
			return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
		}
		return cmp.Or(cmp.Compare(a.Endpoint, b.Endpoint), cmp.Compare(a.ID, b.ID))
	})
	return &ts[0], nil
}

// match compares the client's digest with what was observed at t; a set
// seen earlier is returned with its times.
func (c *Checker) match(q *Query, t *Target) (string, *SeenBefore, error) {
	switch {
	case t.SubjectDigest == "":
		return matchNotObserved, nil, nil
	case q.digestErr != nil:
		return matchUndigestible, nil, nil
	case q.digest == "":
		return matchNoDigest, nil, nil
	case t.ToolSetDigest != "" && q.digest == t.ToolSetDigest:
		return matchSame, nil, nil
	}
	sb, seen, err := c.targets.SeenBefore(t.ID, q.digest)
	if err != nil {
		return "", nil, fmt.Errorf("looking up earlier tool sets: %w", err)
	}
	if !seen {
		return matchDifferent, nil, nil
	}
	return matchPrevious, &sb, nil
}

// contribute adds one to the public count of (target, digest, day) when the
// client asked and has not already counted for this target today. A store
// failure loses the count, never the answer.
func (c *Checker) contribute(q *Query, t *Target, client httpx.ClientKey, now time.Time) bool {
	if !q.contribute || q.digest == "" || c.reports == nil {
		return false
	}
	if ok, _ := c.contributed.Allow(reportKey{client, t.ID}); !ok {
		return false
	}
	if ok, _ := c.contributors.Allow(client); !ok {
		return false
	}
	if err := c.reports.AddClientReport(t.ID, q.digest, now.Format(checkDayLayout)); err != nil {
		c.logger.Error("storing client report", "target", t.ID, "err", err)
		return false
	}
	return true
}

func noteFor(match string, t *Target) string {
	note := checkNotes[match]
	if t == nil || match == matchNotListed || match == matchNotObserved {
		return note
	}
	if t.Delisted {
		if t.LastListed.IsZero() {
			note += noteDelisted
		} else {
			note += fmt.Sprintf(noteDelistedOn, t.LastListed.UTC().Format(checkDayLayout))
		}
	}
	if t.LastStatus != "" && t.LastStatus != "ok" {
		note += fmt.Sprintf(noteLatestFailed, t.LastStatus)
	}
	return note
}

// sign signs the answer as a tree head is signed: Ed25519 over the RFC
// 8785 bytes of every member but signature. The members are written once,
// straight in canonical order; the served answer is those bytes with the
// signature spliced into its sorted place.
func (c *Checker) sign(d *answerDoc) ([]byte, error) {
	w := &canonWriter{b: make([]byte, 0, 2048)}
	cut := c.writeUnsigned(w, d)
	if w.err != nil {
		return nil, fmt.Errorf("canonicalising check answer: %w", w.err)
	}
	msg := w.b
	sw := &canonWriter{b: make([]byte, 0, len(msg)+256), more: true} // msg[:cut] holds members
	sw.b = append(sw.b, msg[:cut]...)
	sw.object("signature", func() {
		sw.str("alg", checkSignatureAlg)
		sw.str("value", base64.RawURLEncoding.EncodeToString(ed25519.Sign(c.key, msg)))
		sw.str("verificationMethod", awr.VerificationMethod(c.did))
	})
	if sw.err != nil {
		return nil, fmt.Errorf("canonicalising check signature: %w", sw.err)
	}
	return append(sw.b, msg[cut:]...), nil
}

// writeUnsigned writes the answer without its signature, members in
// canonical order, and returns where the signature member goes (before
// target, or type). Every key is this file's own ASCII, so canonical order
// is byte order; the tests re-check it with a JCS library.
func (c *Checker) writeUnsigned(w *canonWriter, d *answerDoc) (cut int) {
	q, t := d.q, d.t
	w.b = append(w.b, '{')
	if d.agreement != nil {
		w.value("agreement", d.agreement)
	}
	w.str("checkedAt", d.now.Format(checkTimeLayout))
	if d.contributed {
		w.boolean("contributed", true)
	}
	w.str("issuer", c.did)
	if d.head.Size > 0 {
		w.object("log", func() {
			w.str("rootHash", hex.EncodeToString(d.head.Root[:]))
			w.str("timestamp", d.head.Time.UTC().Format(checkTimeLayout))
			w.num("treeSize", int64(d.head.Size))
		})
	}
	w.str("match", d.match)
	w.str("note", noteFor(d.match, t))
	if t != nil && (t.ToolSetDigest != "" || t.SubjectDigest != "") {
		w.object("observed", func() { writeObserved(w, t) })
	}
	if d.observers != nil {
		w.value("observers", d.observers)
	}
	if d.scan != nil {
		w.raw("patternScan", d.scan)
	}
	w.object("query", func() { writeQuery(w, q) })
	if sb := d.seen; sb != nil {
		// HISTOR's member names, snake case as its store writes them.
		w.object("seenBefore", func() {
			w.str("first_seen", sb.FirstSeen.UTC().Format(checkTimeLayout))
			w.str("last_seen", sb.LastSeen.UTC().Format(checkTimeLayout))
			w.num("observations", int64(sb.Observations))
		})
	}
	cut = len(w.b)
	if t != nil {
		w.object("target", func() { c.writeTarget(w, t) })
	}
	w.str("type", Type)
	w.b = append(w.b, '}')
	return cut
}

// writeQuery writes the query as the answer repeats it.
func writeQuery(w *canonWriter, q *Query) {
	if q.digestErr != nil {
		w.value("digestError", q.digestErr)
	}
	w.optStr("endpoint", q.endpoint)
	w.optStr("name", q.name)
	w.optStr("toolSetDigest", q.digest)
}

func (c *Checker) writeTarget(w *canonWriter, t *Target) {
	w.str("badge", c.base+"/badge/"+t.ID+".svg")
	w.str("endpoint", t.Endpoint)
	w.str("id", t.ID)
	if t.LastStatus != "" {
		w.str("lastStatus", t.LastStatus)
	} else {
		w.null("lastStatus") // before the first attempt, as HISTOR's
	}
	w.boolean("listed", !t.Delisted)
	w.str("name", t.Name)
	w.str("page", c.base+"/s/"+t.ID)
}

// writeObserved writes what was observed at t, members without a value
// left out.
func writeObserved(w *canonWriter, t *Target) {
	w.num("changes", int64(t.Changes))
	w.optTime("firstPinned", t.FirstPinned)
	w.optTime("lastObserved", t.LastObserved)
	w.num("observations", int64(t.Observations))
	w.optStr("subjectDigest", t.SubjectDigest)
	w.num("toolCount", int64(t.ToolCount))
	w.optStr("toolSetDigest", t.ToolSetDigest)
	w.optTime("unchangedSince", t.UnchangedSince)
}

// canonWriter writes RFC 8785 JSON objects member by member; the caller
// gives the members in canonical order. Keys are ASCII names written as
// they are; values go through canon, which refuses what RFC 8785 cannot
// write (the first refusal is kept in err).
type canonWriter struct {
	b    []byte
	more bool // a member was written at this depth: a comma goes first
	err  error
}

func (w *canonWriter) key(k string) {
	if w.more {
		w.b = append(w.b, ',')
	}
	w.b = append(append(append(w.b, '"'), k...), '"', ':')
	w.more = true
}

func (w *canonWriter) value(k string, v any) {
	w.key(k)
	var err error
	if w.b, err = canon.Append(w.b, v); err != nil && w.err == nil {
		w.err = fmt.Errorf("member %s: %w", k, err)
	}
}

func (w *canonWriter) str(k, v string) { w.value(k, v) }

func (w *canonWriter) num(k string, v int64) { w.key(k); w.b = strconv.AppendInt(w.b, v, 10) }

func (w *canonWriter) boolean(k string, v bool) { w.key(k); w.b = strconv.AppendBool(w.b, v) }

func (w *canonWriter) null(k string) { w.key(k); w.b = append(w.b, "null"...) }

func (w *canonWriter) raw(k string, v []byte) { w.key(k); w.b = append(w.b, v...) }

// optStr and optTime write a member only when it has a value.
func (w *canonWriter) optStr(k, v string) {
	if v != "" {
		w.str(k, v)
	}
}

func (w *canonWriter) optTime(k string, v time.Time) {
	if !v.IsZero() {
		w.str(k, v.UTC().Format(checkTimeLayout))
	}
}

// object writes member k as an object whose members fill writes.
func (w *canonWriter) object(k string, fill func()) {
	w.key(k)
	w.b, w.more = append(w.b, '{'), false
	fill()
	w.b, w.more = append(w.b, '}'), true
}
