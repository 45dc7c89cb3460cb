package federation

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/histor-observer/histor/gossip"
	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/mirror"
)

// serveMirrors answers /api/v1/mirrors: every observer's log this node mirrors, how far,
// and what the last sync met.
func (mt Mount) serveMirrors(w http.ResponseWriter, r *http.Request) {
	list := []mirrorEntry{}
	var clocks map[string]gossip.Clock
	var m *mirror.Store
	if f := mt.Federation(); f != nil {
		if g := f.gos.Load(); g != nil {
			clocks = g.Clocks()
		}
		m = f.mirror.Load()
	}
	if m != nil {
		for _, st := range m.Statuses() {
			e := mirrorEntry{Status: st}
			if k, ok := clocks[st.Observer]; ok {
				e.Clock = &clockJSON{OffsetMs: k.Offset.Milliseconds(), RTTMs: k.RTT.Milliseconds(), MeasuredAt: k.At.UTC().Format(time.RFC3339)}
			}
			list = append(list, e)
		}
	}
	httpx.WriteJSON(w, r, mt.Logger, map[string]any{"mirrors": list})
}

// mirrorEntry is one mirror's status and, when measured, its observer's clock offset.
type mirrorEntry struct {
	mirror.Status
	Clock *clockJSON `json:"clock,omitempty"`
}

// clockJSON is a peer's clock minus this node's, known to within half the round trip.
type clockJSON struct {
	OffsetMs   int64  `json:"offsetMs"`
	RTTMs      int64  `json:"rttMs"`
	MeasuredAt string `json:"measuredAt"`
}

// serveMirrorPath answers /mirror/<did>/checkpoint and /mirror/<did>/tile/…: the
// observer's log as this node holds it, the bytes the observer signed.
func (mt Mount) serveMirrorPath(w http.ResponseWriter, r *http.Request) {
	var m *mirror.Store
	if f := mt.Federation(); f != nil {
		m = f.mirror.Load()
	}
	if m == nil {
		httpx.WriteDetail(w, http.StatusNotFound, "this node mirrors no log")
		return
	}
	did := r.PathValue("did")
	rest := strings.TrimPrefix(r.URL.Path, "/mirror/"+did+"/")
	body, err := readMirror(m, did, rest)
	switch {
	case errors.Is(err, mirror.ErrNotFound):
		httpx.WriteDetail(w, http.StatusNotFound, "not in this node's mirror")
		return
	case errors.Is(err, mirror.ErrMalformed):
		httpx.WriteDetail(w, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		httpx.Internal(w, r, mt.Logger, "reading the mirror", err)
		return
	}
	h := w.Header()
	if rest == "checkpoint" {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
	} else {
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Cache-Control", "public, max-age=3600")
	}
	w.Write(body)
}
