package node

import (
	"net/http"
	"strings"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/internal/feedtext"
	"github.com/histor-observer/histor/node/views"
)

// serveFeed answers /feed.xml: an Atom feed of the latest changes, or with
// ?watch=id,… of the latest changes of those servers.
func (a *api) serveFeed(w http.ResponseWriter, r *http.Request) {
	rd := a.reader(w)
	if rd == nil {
		return
	}
	watch, err := feedtext.WatchIDs(r.URL.RawQuery)
	if err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	var cs []state.Change
	if watch != nil {
		cs, err = rd.Catalog.ChangesOf(watch, views.FeedEntries)
	} else {
		cs, err = rd.Catalog.Changes(0, views.FeedEntries)
	}
	if err != nil {
		a.internal(w, r, "listing changes", err)
		return
	}
	base := rd.PublicBase
	if base == "" {
		base = "http://" + r.Host
	}
	splits := views.FeedSplits(rd.Catalog, a.peerView(), watch, func(id string, err error) {
		a.logger.Error("reading the peer view for the feed", "server", id, "err", err)
	})
	writeBody(w, "application/atom+xml", views.RenderFeed(rd.Catalog, strings.TrimSuffix(base, "/"), splits, cs, rd.now()))
}
