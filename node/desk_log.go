package node

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/desk"
	"github.com/histor-observer/histor/node/desklog"
)

// The Log page (/log) and the desk's static files (/static/<name>). The
// page is whole without script: the latest head, its checkpoint with the
// cosignatures, the witness policy and a picture of the tree, all drawn
// here. desk/static/log.js adds what only the reader's browser can do for
// itself: keep a head and check later ones against it.

//go:embed desk/static/*.js
var deskStatic embed.FS

// logPageCSP lets the page run its own scripts and call its own API, and
// nothing else; every other desk page runs no script.
const logPageCSP = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// serveDeskLog answers /log.
func (a *api) serveDeskLog(w http.ResponseWriter, r *http.Request) {
	v, err := a.logView()
	if err != nil {
		a.internal(w, r, "reading the log for its page", err)
		return
	}
	a.renderDesk(w, r, http.StatusOK, "log", "Log", "log", v)
}

func (a *api) logView() (*desk.LogView, error) {
	latest := a.log.Latest()
	v := &desk.LogView{Checkpoint: string(latest.Checkpoint)}
	if a.fed != nil && a.fed.Submitting() {
		v.Checkpoint = string(a.fed.CosignedCheckpoint(latest))
	}
	v.Witness = a.witnessView([]byte(v.Checkpoint))
	head, err := a.latestSTH()
	if errors.Is(err, errEmptyLog) {
		return v, nil
	}
	if err != nil {
		return nil, err
	}
	sth, err := format.ParseSTH(head.STH)
	if err != nil {
		return nil, err
	}
	v.Head = &desk.LogHead{Size: sth.TreeSize, SizeText: desklog.Comma(sth.TreeSize), Root: hex.EncodeToString(sth.Root[:]),
		Time: catalog.FormatTime(sth.Time), Log: sth.Log, VerificationMethod: sth.VerificationMethod,
		Signature: base64.RawURLEncoding.EncodeToString(sth.Signature), STH: string(head.STH)}
	tree, err := a.drawnTree(sth.TreeSize, sth.Root)
	if err != nil {
		a.logger.Error("drawing the log", "size", sth.TreeSize, "err", err)
		v.PictureErr = "The picture of the tree could not be drawn: its hashes were not readable or did not climb to the signed root."
		return v, nil
	}
	v.Picture = tree.Draw()
	return v, nil
}

// drawnTree reads what the picture needs: the last leaf's inclusion proof
// (whose top hashes are the right edge's perfect subtrees) and the newest
// leaves. A few reads at any size.
func (a *api) drawnTree(size uint64, root [32]byte) (*desklog.Tree, error) {
	proof, err := a.log.InclusionProof(size-1, size)
	if err != nil {
		return nil, err
	}
	_, rs := desklog.Plan(size)
	recent := make([][32]byte, 0, size-rs)
	err = a.log.EachEntry(rs, size, func(_ uint64, label []byte) error {
		recent = append(recent, desklog.LeafHash(label))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return desklog.New(size, root, proof, recent)
}

// witnessView reads the cosigned checkpoint under the submitter's policy.
func (a *api) witnessView(cp []byte) desk.LogWitness {
	var p *format.Policy
	if a.fed != nil {
		p = a.fed.Policy()
	}
	return policyView(p, cp)
}

// policyView reads cp under p; nil p: no policy configured.
func policyView(p *format.Policy, cp []byte) desk.LogWitness {
	if p == nil {
		return desk.LogWitness{}
	}
	v := desk.LogWitness{Configured: true, Quorum: p.Quorum, Listed: len(p.Witnesses)}
	_, names, err := p.Verify(cp)
	v.Met = err == nil
	if err != nil && !errors.Is(err, format.ErrNoQuorum) {
		v.Problem = err.Error()
	}
	for _, w := range p.Witnesses {
		row := desk.LogWitnessRow{Name: w.Name, KeyName: w.Cosigner.Name, Cosigned: slices.Contains(names, w.Name)}
		if row.Cosigned {
			v.Cosigned++
		}
		v.Witnesses = append(v.Witnesses, row)
	}
	return v
}

// staticTypes are the media types of what /static/ serves, by extension.
var staticTypes = map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}

// serveStatic answers /static/<name> with an embedded file. A file changes
// only with the binary, so its ETag is its digest and a browser revalidates.
func (a *api) serveStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	ctype, ok := staticTypes[path.Ext(name)]
	if !ok || strings.ContainsAny(name, "/\\") {
		a.fail(w, http.StatusNotFound, "no such file")
		return
	}
	body, err := deskStatic.ReadFile("desk/static/" + name)
	if err != nil {
		a.fail(w, http.StatusNotFound, "no such file")
		return
	}
	sum := sha256.Sum256(body)
	etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Content-Type", ctype)
	w.Write(body)
}
