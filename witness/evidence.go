package witness

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/histor-observer/histor/log/format"
)

// Evidence is an equivocation bundle as the witness keeps it.
type Evidence struct {
	ID     string // lowercase hex of the bundle's format.Equivocation ID
	Origin string
	Kind   format.EquivocationKind
	Seen   time.Time // when this witness stored it, whole seconds
	// Bundle is the format.Equivocation encoding: check it with format.VerifyEquivocation and
	// the log's verifier.
	Bundle []byte
}

// ErrNotFound is returned by GetEvidence for an ID the witness does not hold.
var ErrNotFound = errors.New("no such evidence")

// keepEvidence stores a bundle unless one with its ID is held already, and reports whether it
// stored it now. A failed write is logged and the request still refused: losing the bundle
// never turns a fork into a cosignature.
func (w *Witness) keepEvidence(e *format.Equivocation) (*Evidence, bool) {
	ev := &Evidence{ID: hex.EncodeToString(idOf(e)), Origin: e.Origin, Kind: e.Kind(),
		Seen: time.Unix(w.clock().Unix(), 0).UTC(), Bundle: e.Marshal()}
	held, fresh, err := w.storeEvidence(ev)
	if err != nil {
		w.logger.Error("witness could not store equivocation evidence", "origin", e.Origin, "id", ev.ID, "err", err)
		return ev, false
	}
	if fresh {
		w.logger.Warn("log equivocated", "origin", e.Origin, "kind", ev.Kind.String(), "id", ev.ID,
			"size_a", e.A.Size, "size_b", e.B.Size)
	}
	return held, fresh
}

func idOf(e *format.Equivocation) []byte { id := e.ID(); return id[:] }

// storeEvidence writes ev unless its ID is held, returning what is held.
func (w *Witness) storeEvidence(ev *Evidence) (*Evidence, bool, error) {
	id, _ := hex.DecodeString(ev.ID)
	key := evidenceKey([32]byte(id))
	w.evidenceMu.Lock()
	defer w.evidenceMu.Unlock()
	if b, ok, err := w.get(key); err != nil || ok {
		if err != nil {
			return nil, false, err
		}
		held, err := decodeEvidence(ev.ID, b)
		return held, false, err
	}
	v := binary.BigEndian.AppendUint64(nil, uint64(ev.Seen.Unix()))
	if err := w.commit(kvPair{key, append(v, ev.Bundle...)}); err != nil {
		return nil, false, err
	}
	w.metrics.forks.WithLabelValues(ev.Kind.String()).Inc()
	return ev, true, nil
}

func decodeEvidence(id string, b []byte) (*Evidence, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("reading evidence %s: too short", id)
	}
	e, err := format.ParseEquivocation(b[8:])
	if err != nil {
		return nil, fmt.Errorf("reading evidence %s: %w", id, err)
	}
	return &Evidence{ID: id, Origin: e.Origin, Kind: e.Kind(),
		Seen: time.Unix(int64(binary.BigEndian.Uint64(b)), 0).UTC(), Bundle: b[8:]}, nil
}

// AddEvidence stores a bundle received from elsewhere (a peer's gossip) after checking it
// against the verifier of the log it accuses, which this witness must witness. fresh is false
// when a bundle with its ID was held already (the held one is returned). OnEvidence is not
// called: whoever hands the bundle in has it already.
func (w *Witness) AddEvidence(bundle []byte) (ev Evidence, fresh bool, err error) {
	e, err := format.ParseEquivocation(bundle)
	if err != nil {
		return Evidence{}, false, fmt.Errorf("adding evidence: %w", err)
	}
	l := w.log(e.Origin)
	if l == nil {
		return Evidence{}, false, fmt.Errorf("adding evidence: unknown log %q", e.Origin)
	}
	if _, err := format.VerifyEquivocation(bundle, l.verifier); err != nil {
		return Evidence{}, false, fmt.Errorf("adding evidence: %w", err)
	}
	in := &Evidence{ID: hex.EncodeToString(idOf(e)), Origin: e.Origin, Kind: e.Kind(),
		Seen: time.Unix(w.clock().Unix(), 0).UTC(), Bundle: e.Marshal()}
	held, fresh, err := w.storeEvidence(in)
	if err != nil {
		return Evidence{}, false, fmt.Errorf("adding evidence: %w", err)
	}
	return *held, fresh, nil
}

// GetEvidence returns the bundle with the given ID (lowercase hex).
func (w *Witness) GetEvidence(id string) (Evidence, error) {
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != 32 || hex.EncodeToString(raw) != id {
		return Evidence{}, ErrNotFound
	}
	b, ok, err := w.get(evidenceKey([32]byte(raw)))
	if err != nil {
		return Evidence{}, fmt.Errorf("reading evidence %s: %w", id, err)
	}
	if !ok {
		return Evidence{}, ErrNotFound
	}
	ev, err := decodeEvidence(id, b)
	if err != nil {
		return Evidence{}, err
	}
	return *ev, nil
}

// ListEvidence returns every bundle held, in ID order.
func (w *Witness) ListEvidence() ([]Evidence, error) {
	var out []Evidence
	err := w.scan([]byte("e\x00"), func(key, value []byte) error {
		ev, err := decodeEvidence(hex.EncodeToString(key[2:]), value)
		if err != nil {
			return err
		}
		out = append(out, *ev)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing evidence: %w", err)
	}
	return out, nil
}
