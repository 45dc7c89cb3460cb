package logapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/internal/proofs"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/node/views"
)

// vcMediaType is what HISTOR serves a label as.
const vcMediaType = "application/vc"

// routeLabel handles /api/v1/labels/<id> and /api/v1/labels/<id>/proof.
// Label ids are URNs and never hold "/".
func (m Mount) routeLabel(w http.ResponseWriter, r *http.Request, p string) {
	id, rest, hasRest := strings.Cut(p, "/")
	switch {
	case id == "" || (hasRest && rest != "proof"):
		fail(w, http.StatusNotFound, "not found")
	case len(id) > MaxIDBytes:
		fail(w, http.StatusBadRequest, "label id too long")
	case hasRest:
		m.serveLabelProof(w, r, id)
	default:
		m.serveLabel(w, r, id)
	}
}

// lookupLabel finds a label's leaf index, answering 404 itself if unknown.
func (m Mount) lookupLabel(w http.ResponseWriter, r *http.Request, id string) (uint64, bool) {
	index, err := m.Log.LabelIndex(id)
	if errors.Is(err, hlog.ErrNotFound) {
		fail(w, http.StatusNotFound, "unknown label")
		return 0, false
	}
	if err != nil {
		m.internal(w, r, "looking up label", err)
		return 0, false
	}
	return index, true
}

func (m Mount) serveLabel(w http.ResponseWriter, r *http.Request, id string) {
	index, ok := m.lookupLabel(w, r, id)
	if !ok {
		return
	}
	body, err := m.Log.Entry(index)
	if err != nil {
		m.internal(w, r, "reading label", err)
		return
	}
	w.Header().Set("Cache-Control", httpx.CacheImmutable)
	httpx.WriteBody(w, vcMediaType, body)
}

// serveLabelProof answers /api/v1/labels/<id>/proof?tree_size=: the leaf
// index, the head (latest, or the one signed at tree_size) and the inclusion
// proof under it. As in HISTOR, 409 when no head covers the label.
func (m Mount) serveLabelProof(w http.ResponseWriter, r *http.Request, id string) {
	size := httpx.Uint{Name: "tree_size"}
	if err := httpx.ReadUints(r.URL.RawQuery, &size); err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if size.Present && size.Value < 1 {
		fail(w, http.StatusBadRequest, "tree_size must be at least 1")
		return
	}
	index, ok := m.lookupLabel(w, r, id)
	if !ok {
		return
	}
	head, err := m.headFor(size)
	if err != nil && !errors.Is(err, hlog.ErrNotFound) {
		m.internal(w, r, "reading head", err)
		return
	}
	if err != nil || head.Size <= index {
		fail(w, http.StatusConflict, "no signed tree head covers this label yet")
		return
	}
	proof, err := m.Log.InclusionProof(index, head.Size)
	if err != nil {
		m.proofFailed(w, r, err)
		return
	}
	m.writeLabelProof(w, id, index, head, proof)
}

func (m Mount) headFor(size httpx.Uint) (hlog.Head, error) {
	if size.Present {
		return m.Log.HeadAt(size.Value)
	}
	// The head /api/v1/log/sth serves: the first signed at the latest size.
	return m.Log.HeadAt(m.Log.Size())
}

func (m Mount) writeLabelProof(w http.ResponseWriter, id string, index uint64, head hlog.Head, proof [][32]byte) {
	quoted, _ := json.Marshal(id) // a string always marshals
	b := proofs.GetBuf()
	defer proofs.PutBuf(b)
	*b = append(*b, `{"labelId":`...)
	*b = append(*b, quoted...)
	*b = append(*b, `,"leafIndex":`...)
	*b = strconv.AppendUint(*b, index, 10)
	*b = append(*b, `,"leafInput":"JCS(label document)","sth":`...)
	*b = append(*b, head.STH...)
	*b = append(*b, `,"inclusionProof":`...)
	*b = proofs.AppendHexList(*b, proof)
	*b = append(*b, '}')
	httpx.WriteBody(w, "application/json", *b)
}

// serveEvidence answers /api/v1/<kind>/<sri> with the stored JCS bytes.
func (m Mount) serveEvidence(w http.ResponseWriter, r *http.Request, kind, sri string) {
	if !mtl.ValidSRI(sri) {
		fail(w, http.StatusBadRequest, "digest must be sha256-<base64 of 32 bytes>")
		return
	}
	body, err := m.Log.Evidence(kind, sri)
	if errors.Is(err, hlog.ErrNotFound) {
		fail(w, http.StatusNotFound, "unknown "+strings.TrimSuffix(kind, "s"))
		return
	}
	if err != nil {
		m.internal(w, r, "reading evidence", err)
		return
	}
	w.Header().Set("Cache-Control", httpx.CacheImmutable)
	httpx.WriteBody(w, "application/json", body)
}

// entrySummary is one row of /api/v1/log/entries, HISTOR's member names.
type entrySummary struct {
	LeafIndex   uint64  `json:"leaf_index"`
	ID          string  `json:"id"`
	Digest      string  `json:"digest"`
	Method      string  `json:"method"`
	Verdict     string  `json:"verdict"`
	TargetID    *string `json:"target_id"` // from the crawl state; null without one
	IssuedAt    string  `json:"issued_at"`
	MethodShort string  `json:"methodShort"`
}

// labelFields are the members of a label an entry row repeats.
type labelFields struct {
	ID                string `json:"id"`
	ValidFrom         string `json:"validFrom"`
	CredentialSubject struct {
		Verdict string `json:"verdict"`
		Method  struct {
			ID string `json:"id"`
		} `json:"method"`
	} `json:"credentialSubject"`
}

// serveEntries answers /api/v1/log/entries?start=&end=: leaves [start, end)
// in order, at most MaxEntries, clipped to the log as HISTOR clips them.
func (m Mount) serveEntries(w http.ResponseWriter, r *http.Request) {
	start, end := httpx.Uint{Name: "start"}, httpx.Uint{Name: "end"}
	if err := httpx.ReadUints(r.URL.RawQuery, &start, &end); err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if end.Present && end.Value < start.Value {
		fail(w, http.StatusBadRequest, "end must not be below start")
		return
	}
	stop := m.entriesStop(start.Value, end)
	rows := make([]entrySummary, 0, stop-start.Value)
	if start.Value < stop {
		err := m.Log.EachEntry(start.Value, stop, func(i uint64, label []byte) error {
			rows = append(rows, summarize(i, label))
			return nil
		})
		if err != nil {
			m.internal(w, r, "reading entries", err)
			return
		}
	}
	if err := m.fillTargets(rows); err != nil {
		m.internal(w, r, "reading entry targets", err)
		return
	}
	body, err := json.Marshal(struct {
		Start   uint64         `json:"start"`
		Entries []entrySummary `json:"entries"`
	}{start.Value, rows})
	if err != nil {
		m.internal(w, r, "encoding entries", err)
		return
	}
	httpx.WriteBody(w, "application/json", body)
}

// entriesStop is the exclusive end actually served: the asked end (or
// start+100), never more than MaxEntries past start, never past the log.
func (m Mount) entriesStop(start uint64, end httpx.Uint) uint64 {
	size := m.Log.Size()
	if start >= size {
		return start
	}
	stop := min(size, start+m.MaxEntries)
	if !end.Present {
		end.Value = start + defaultEntriesSpan
	}
	return min(stop, end.Value)
}

// summarize derives an entry row from the label's own bytes; the digest is
// the SRI of those JCS bytes, as HISTOR's canonical_sri is.
func summarize(index uint64, label []byte) entrySummary {
	var f labelFields
	_ = json.Unmarshal(label, &f) // a logged label is valid JSON; a missing member stays ""
	return entrySummary{
		LeafIndex:   index,
		ID:          f.ID,
		Digest:      mtl.SRI(label),
		Method:      f.CredentialSubject.Method.ID,
		Verdict:     f.CredentialSubject.Verdict,
		IssuedAt:    f.ValidFrom,
		MethodShort: views.ShortMethod(f.CredentialSubject.Method.ID),
	}
}

// fillTargets sets each row's target_id from the crawl state, when there
// is one.
func (m Mount) fillTargets(rows []entrySummary) error {
	t := m.targets()
	if t == nil {
		return nil
	}
	for i := range rows {
		id, err := t.LabelTarget(rows[i].ID)
		if err != nil {
			return err
		}
		rows[i].TargetID = views.NullString(id)
	}
	return nil
}
