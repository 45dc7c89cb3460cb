package submit

import (
	"bytes"

	"github.com/histor-observer/histor/log/format"
)

// cosigned is one checkpoint with the cosignatures collected for it, at most one per
// witness (the newest it gave).
type cosigned struct {
	c    format.Checkpoint
	raw  []byte                // the checkpoint as the log signed it
	sigs []*format.Cosignature // by witness index; nil where none was collected
}

func newCosigned(c format.Checkpoint, raw []byte, witnesses int) *cosigned {
	return &cosigned{c: c, raw: bytes.Clone(raw), sigs: make([]*format.Cosignature, witnesses)}
}

// add keeps s as witness i's cosignature unless it already has one as new, and reports
// whether it did.
func (cs *cosigned) add(i int, s format.Cosignature) bool {
	if old := cs.sigs[i]; old == nil || old.Time < s.Time {
		cs.sigs[i] = &s
		return true
	}
	return false
}

func (cs *cosigned) list() []format.Cosignature {
	var out []format.Cosignature
	for _, s := range cs.sigs {
		if s != nil {
			out = append(out, *s)
		}
	}
	return out
}

// note is the log's signed checkpoint followed by each cosignature line, in witness
// order: a note any signed-note verifier opens, each witness's line checked by its key.
func (cs *cosigned) note() []byte {
	out := bytes.Clone(cs.raw)
	for _, s := range cs.list() {
		out = append(out, s.Line()...)
		out = append(out, '\n')
	}
	return out
}
