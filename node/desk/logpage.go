package desk

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"

	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/desklog"
)

// The Log page (/log). The page is whole without script: the latest head,
// its checkpoint with the cosignatures, the witness policy and a picture
// of the tree, all drawn here. static/log.js adds what only the reader's
// browser can do for itself: keep a head and check later ones against it.

// logPageCSP lets the page run its own scripts and call its own API, and
// nothing else; every other page runs no script.
const logPageCSP = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// serveLog answers /log.
func (m Mount) serveLog(w http.ResponseWriter, r *http.Request) {
	v, err := m.logView()
	if err != nil {
		m.internal(w, r, "reading the log for its page", err)
		return
	}
	m.render(w, r, http.StatusOK, "log", "Log", "log", v)
}

func (m Mount) logView() (*LogView, error) {
	latest := m.Log.Latest()
	v := &LogView{Checkpoint: string(latest.Checkpoint)}
	f := m.federation()
	var p *format.Policy
	if f != nil {
		v.Checkpoint, p = string(f.Cosigned(latest)), f.Policy()
	}
	v.Witness = witnessView(p, []byte(v.Checkpoint))
	size := m.Log.Latest().Size
	if size == 0 {
		return v, nil
	}
	head, err := m.Log.HeadAt(size) // the first head signed at the latest size
	if err != nil {
		return nil, err
	}
	sth, err := format.ParseSTH(head.STH)
	if err != nil {
		return nil, err
	}
	v.Head = &LogHead{Size: sth.TreeSize, SizeText: desklog.Comma(sth.TreeSize), Root: hex.EncodeToString(sth.Root[:]),
		Time: catalog.FormatTime(sth.Time), Log: sth.Log, VerificationMethod: sth.VerificationMethod,
		Signature: base64.RawURLEncoding.EncodeToString(sth.Signature), STH: string(head.STH)}
	tree, err := m.drawnTree(sth.TreeSize, sth.Root)
	if err != nil {
		m.Logger.Error("drawing the log", "size", sth.TreeSize, "err", err)
		v.PictureErr = "The picture of the tree could not be drawn: its hashes were not readable or did not climb to the signed root."
		return v, nil
	}
	v.Picture = tree.Draw()
	return v, nil
}

// drawnTree reads what the picture needs: the last leaf's inclusion proof
// (whose top hashes are the right edge's perfect subtrees) and the newest
// leaves. A few reads at any size.
func (m Mount) drawnTree(size uint64, root [32]byte) (*desklog.Tree, error) {
	proof, err := m.Log.InclusionProof(size-1, size)
	if err != nil {
		return nil, err
	}
	_, rs := desklog.Plan(size)
	recent := make([][32]byte, 0, size-rs)
	err = m.Log.EachEntry(rs, size, func(_ uint64, label []byte) error {
		recent = append(recent, desklog.LeafHash(label))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return desklog.New(size, root, proof, recent)
}

// witnessView reads the cosigned checkpoint cp under the submitter's
// policy p; nil p: none is configured.
func witnessView(p *format.Policy, cp []byte) LogWitness {
	if p == nil {
		return LogWitness{}
	}
	v := LogWitness{Configured: true, Quorum: p.Quorum, Listed: len(p.Witnesses)}
	_, names, err := p.Verify(cp)
	v.Met = err == nil
	if err != nil && !errors.Is(err, format.ErrNoQuorum) {
		v.Problem = err.Error()
	}
	for _, w := range p.Witnesses {
		row := LogWitnessRow{Name: w.Name, KeyName: w.Cosigner.Name, Cosigned: slices.Contains(names, w.Name)}
		if row.Cosigned {
			v.Cosigned++
		}
		v.Witnesses = append(v.Witnesses, row)
	}
	return v
}
