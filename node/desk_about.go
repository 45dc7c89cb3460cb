package node

import (
	"net/http"

	"github.com/histor-observer/histor/node/desk"
)

// serveDeskAbout renders /about: what the log can and cannot show, and
// how to check it offline.
func (a *api) serveDeskAbout(w http.ResponseWriter, r *http.Request) {
	v := &desk.AboutView{Origin: checkpointOrigin(a.log.Latest().Checkpoint)}
	if a.fed != nil {
		v.DID = a.fed.DID()
	}
	if rd := a.read.Load(); rd != nil {
		v.PublicURL = rd.PublicBase
	}
	a.renderDesk(w, r, http.StatusOK, "about", "About this observer", "about", v)
}
