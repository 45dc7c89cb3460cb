package node

import (
	"cmp"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"github.com/histor-observer/histor/node/catalog"
	"slices"
	"time"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
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

// answer builds, signs and encodes the answer to q from client.
func (c *checker) answer(q *checkQuery, client clientKey, lg Log) ([]byte, error) {
	now := c.now().UTC()
	t, err := c.findTarget(q)
	if err != nil {
		return nil, err
	}
	doc := map[string]any{
		"type":      CheckType,
		"checkedAt": now.Format(checkTimeLayout),
		"issuer":    c.did,
		"query":     q.member(),
	}
	match := matchNotListed
	if t != nil {
		doc["target"] = c.targetMember(t)
		if obs := observedMember(t); obs != nil {
			doc["observed"] = obs
		}
		if match, err = c.match(q, t, doc); err != nil {
			return nil, err
		}
		if c.contribute(q, t, client, now) {
			doc["contributed"] = true
		}
	}
	doc["match"] = match
	doc["note"] = noteFor(match, t)
	raw := map[string][]byte{}
	if ps := c.patternScan(q, t, client, lg); ps != nil {
		raw["patternScan"] = ps
	}
	if head := lg.Latest(); head.Size > 0 {
		doc["log"] = map[string]any{
			"treeSize": int64(head.Size), "rootHash": hex.EncodeToString(head.Root[:]),
			"timestamp": head.Time.UTC().Format(checkTimeLayout),
		}
	}
	return c.sign(doc, raw)
}

// findTarget picks the target a query names, as HISTOR does: by endpoint
// when one is sent, else by name; a listed target before a delisted one,
// then by name (or endpoint) order. nil when none is known.
func (c *checker) findTarget(q *checkQuery) (*CheckTarget, error) {
	var ts []CheckTarget
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
	slices.SortFunc(ts, func(a, b CheckTarget) int {
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
// seen earlier adds seenBefore to doc.
func (c *checker) match(q *checkQuery, t *CheckTarget, doc map[string]any) (string, error) {
	switch {
	case t.SubjectDigest == "":
		return matchNotObserved, nil
	case q.digestErr != nil:
		return matchUndigestible, nil
	case q.digest == "":
		return matchNoDigest, nil
	case t.ToolSetDigest != "" && q.digest == t.ToolSetDigest:
		return matchSame, nil
	}
	sb, seen, err := c.targets.SeenBefore(t.ID, q.digest)
	if err != nil {
		return "", fmt.Errorf("looking up earlier tool sets: %w", err)
	}
	if !seen {
		return matchDifferent, nil
	}
	// HISTOR's member names, snake case as its store writes them.
	doc["seenBefore"] = map[string]any{
		"first_seen":   sb.FirstSeen.UTC().Format(checkTimeLayout),
		"last_seen":    sb.LastSeen.UTC().Format(checkTimeLayout),
		"observations": int64(sb.Observations),
	}
	return matchPrevious, nil
}

// contribute adds one to the public count of (target, digest, day) when the
// client asked and has not already counted for this target today. A store
// failure loses the count, never the answer.
func (c *checker) contribute(q *checkQuery, t *CheckTarget, client clientKey, now time.Time) bool {
	if !q.contribute || q.digest == "" || c.reports == nil {
		return false
	}
	if ok, _ := c.contributed.Allow(reportKey{client, t.ID}); !ok {
		return false
	}
	if err := c.reports.AddClientReport(t.ID, q.digest, now.Format(checkDayLayout)); err != nil {
		c.logger.Error("storing client report", "target", t.ID, "err", err)
		return false
	}
	return true
}

func noteFor(match string, t *CheckTarget) string {
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

// member is the query as the answer repeats it.
func (q *checkQuery) member() map[string]any {
	m := make(map[string]any, 4)
	putText(m, "endpoint", q.endpoint)
	putText(m, "name", q.name)
	putText(m, "toolSetDigest", q.digest)
	if q.digestErr != nil {
		m["digestError"] = q.digestErr
	}
	return m
}

func (c *checker) targetMember(t *CheckTarget) map[string]any {
	var status any // null before the first attempt, as HISTOR's
	if t.LastStatus != "" {
		status = t.LastStatus
	}
	return map[string]any{
		"id": t.ID, "name": t.Name, "endpoint": t.Endpoint,
		"page":       c.base + "/s/" + t.ID,
		"badge":      c.base + "/badge/" + t.ID + ".svg",
		"lastStatus": status,
		"listed":     !t.Delisted,
	}
}

// observedMember is what was observed at t, members without a value left
// out; nil before the first ok observation.
func observedMember(t *CheckTarget) map[string]any {
	if t.ToolSetDigest == "" && t.SubjectDigest == "" {
		return nil
	}
	m := map[string]any{
		"toolCount": int64(t.ToolCount), "observations": int64(t.Observations), "changes": int64(t.Changes),
	}
	putText(m, "toolSetDigest", t.ToolSetDigest)
	putText(m, "subjectDigest", t.SubjectDigest)
	putTime(m, "firstPinned", t.FirstPinned)
	putTime(m, "unchangedSince", t.UnchangedSince)
	putTime(m, "lastObserved", t.LastObserved)
	return m
}

// putText and putTime set a member only when it has a value.
func putText(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

func putTime(m map[string]any, k string, v time.Time) {
	if !v.IsZero() {
		m[k] = v.UTC().Format(checkTimeLayout)
	}
}

// sign signs the answer as a tree head is signed: Ed25519 over the RFC
// 8785 bytes of every member but signature. doc holds the members to
// encode, raw members already in canonical form (a cached scan). Each
// member is encoded once; the signed bytes and the answer are two joins of
// the same pieces, the answer with signature in its sorted place.
func (c *checker) sign(doc map[string]any, raw map[string][]byte) ([]byte, error) {
	ms := make([]encodedMember, 0, len(doc)+len(raw)+1)
	vals := make([]byte, 0, 2048)
	for k, v := range doc {
		start := len(vals)
		var err error
		if vals, err = canon.Append(vals, v); err != nil {
			return nil, fmt.Errorf("canonicalising check answer member %s: %w", k, err)
		}
		ms = append(ms, encodedMember{k, vals[start:len(vals):len(vals)]})
	}
	size := len(vals)
	for k, b := range raw {
		ms = append(ms, encodedMember{k, b})
		size += len(b)
	}
	size += len(ms) * 24 // keys and punctuation
	slices.SortFunc(ms, func(a, b encodedMember) int { return canon.CompareUTF16(a.key, b.key) })
	msg := joinMembers(make([]byte, 0, size+2), ms)
	sig, err := canon.Append(nil, map[string]any{
		"alg":                checkSignatureAlg,
		"verificationMethod": awr.VerificationMethod(c.did),
		"value":              base64.RawURLEncoding.EncodeToString(ed25519.Sign(c.key, msg)),
	})
	if err != nil {
		return nil, fmt.Errorf("canonicalising check signature: %w", err)
	}
	at, _ := slices.BinarySearchFunc(ms, "signature", func(m encodedMember, k string) int { return canon.CompareUTF16(m.key, k) })
	ms = slices.Insert(ms, at, encodedMember{"signature", sig})
	return joinMembers(make([]byte, 0, len(msg)+len(sig)+16), ms), nil
}

// encodedMember is one member of an answer, its value in canonical form.
type encodedMember struct {
	key string
	val []byte
}

// joinMembers writes an object of members already in canonical order.
// The keys are this file's own ASCII names, so quoting them cannot fail.
func joinMembers(dst []byte, ms []encodedMember) []byte {
	dst = append(dst, '{')
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst, _ = canon.Append(dst, m.key)
		dst = append(dst, ':')
		dst = append(dst, m.val...)
	}
	return append(dst, '}')
}
