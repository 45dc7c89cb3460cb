package desk

import "net/http"

// serveAbout renders /about: what the log can and cannot show, and how to
// check it offline.
func (m Mount) serveAbout(w http.ResponseWriter, r *http.Request) {
	v := &AboutView{Origin: checkpointOrigin(m.Log.Latest().Checkpoint)}
	if f := m.federation(); f != nil {
		v.DID = f.DID()
	}
	if md := m.model(); md != nil {
		v.PublicURL = md.PublicBase
	}
	m.render(w, r, http.StatusOK, "about", "About this observer", "about", v)
}
