package node

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
func (a *api) routeLabel(w http.ResponseWriter, r *http.Request, p string) {
	id, rest, hasRest := strings.Cut(p, "/")
	switch {
	case id == "" || (hasRest && rest != "proof"):
		a.fail(w, http.StatusNotFound, "not found")
	case len(id) > maxIDBytes:
		a.fail(w, http.StatusBadRequest, "label id too long")
	case hasRest:
		a.serveLabelProof(w, r, id)
	default:
		a.serveLabel(w, r, id)
	}
}

// lookupLabel finds a label's leaf index, answering 404 itself if unknown.
func (a *api) lookupLabel(w http.ResponseWriter, r *http.Request, id string) (uint64, bool) {
	index, err := a.log.LabelIndex(id)
	if errors.Is(err, hlog.ErrNotFound) {
		a.fail(w, http.StatusNotFound, "unknown label")
		return 0, false
	}
	if err != nil {
		a.internal(w, r, "looking up label", err)
		return 0, false
	}
	return index, true
}

func (a *api) serveLabel(w http.ResponseWriter, r *http.Request, id string) {
	index, ok := a.lookupLabel(w, r, id)
	if !ok {
		return
	}
	body, err := a.log.Entry(index)
	if err != nil {
		a.internal(w, r, "reading label", err)
		return
	}
	w.Header().Set("Cache-Control", cacheImmutable)
	writeBody(w, vcMediaType, body)
}

// serveLabelProof answers /api/v1/labels/<id>/proof?tree_size=: the leaf
// index, the head (latest, or the one signed at tree_size) and the inclusion
// proof under it. As in HISTOR, 409 when no head covers the label.
func (a *api) serveLabelProof(w http.ResponseWriter, r *http.Request, id string) {
	size := httpx.Uint{Name: "tree_size"}
	if err := httpx.ReadUints(r.URL.RawQuery, &size); err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if size.Present && size.Value < 1 {
		a.fail(w, http.StatusBadRequest, "tree_size must be at least 1")
		return
	}
	index, ok := a.lookupLabel(w, r, id)
	if !ok {
		return
	}
	head, err := a.headFor(size)
	if err != nil && !errors.Is(err, hlog.ErrNotFound) {
		a.internal(w, r, "reading head", err)
		return
	}
	if err != nil || head.Size <= index {
		a.fail(w, http.StatusConflict, "no signed tree head covers this label yet")
		return
	}
	proof, err := a.log.InclusionProof(index, head.Size)
	if err != nil {
		a.proofFailed(w, r, err)
		return
	}
	a.writeLabelProof(w, id, index, head, proof)
}

func (a *api) headFor(size httpx.Uint) (hlog.Head, error) {
	if size.Present {
		return a.log.HeadAt(size.Value)
	}
	// The head /api/v1/log/sth serves: the first signed at the latest size.
	return a.log.HeadAt(a.log.Size())
}

func (a *api) writeLabelProof(w http.ResponseWriter, id string, index uint64, head hlog.Head, proof [][32]byte) {
	quoted, _ := json.Marshal(id) // a string always marshals
	b := getBuf()
	defer putBuf(b)
	*b = append(*b, `{"labelId":`...)
	*b = append(*b, quoted...)
	*b = append(*b, `,"leafIndex":`...)
	*b = strconv.AppendUint(*b, index, 10)
	*b = append(*b, `,"leafInput":"JCS(label document)","sth":`...)
	*b = append(*b, head.STH...)
	*b = append(*b, `,"inclusionProof":`...)
	*b = proofs.AppendHexList(*b, proof)
	*b = append(*b, '}')
	writeBody(w, "application/json", *b)
}

// serveEvidence answers /api/v1/<kind>/<sri> with the stored JCS bytes.
func (a *api) serveEvidence(w http.ResponseWriter, r *http.Request, kind, sri string) {
	if !mtl.ValidSRI(sri) {
		a.fail(w, http.StatusBadRequest, "digest must be sha256-<base64 of 32 bytes>")
		return
	}
	body, err := a.log.Evidence(kind, sri)
	if errors.Is(err, hlog.ErrNotFound) {
		a.fail(w, http.StatusNotFound, "unknown "+strings.TrimSuffix(kind, "s"))
		return
	}
	if err != nil {
		a.internal(w, r, "reading evidence", err)
		return
	}
	w.Header().Set("Cache-Control", cacheImmutable)
	writeBody(w, "application/json", body)
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
// in order, at most maxEntries, clipped to the log as HISTOR clips them.
func (a *api) serveEntries(w http.ResponseWriter, r *http.Request) {
	start, end := httpx.Uint{Name: "start"}, httpx.Uint{Name: "end"}
	if err := httpx.ReadUints(r.URL.RawQuery, &start, &end); err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if end.Present && end.Value < start.Value {
		a.fail(w, http.StatusBadRequest, "end must not be below start")
		return
	}
	stop := a.entriesStop(start.Value, end)
	rows := make([]entrySummary, 0, stop-start.Value)
	if start.Value < stop {
		err := a.log.EachEntry(start.Value, stop, func(i uint64, label []byte) error {
			rows = append(rows, summarize(i, label))
			return nil
		})
		if err != nil {
			a.internal(w, r, "reading entries", err)
			return
		}
	}
	if err := a.fillTargets(rows); err != nil {
		a.internal(w, r, "reading entry targets", err)
		return
	}
	body, err := json.Marshal(struct {
		Start   uint64         `json:"start"`
		Entries []entrySummary `json:"entries"`
	}{start.Value, rows})
	if err != nil {
		a.internal(w, r, "encoding entries", err)
		return
	}
	writeBody(w, "application/json", body)
}

// entriesStop is the exclusive end actually served: the asked end (or
// start+100), never more than maxEntries past start, never past the log.
func (a *api) entriesStop(start uint64, end httpx.Uint) uint64 {
	size := a.log.Size()
	if start >= size {
		return start
	}
	stop := min(size, start+a.maxEntries)
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
