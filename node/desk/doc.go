// Package desk renders the node's desk: the HTML pages people read in a
// browser (servers, a server, changes, check, log, network, about). Pages
// are html/template files and one style sheet embedded with go:embed, so
// the binary needs no build step and no page needs JavaScript to be read.
// The Log page alone carries a script (the node serves it at
// /static/log.js): what a reader's browser checks for itself.
//
// The package holds the templates, the view-model types they read, the
// functions that render them and the handlers that serve them (Routes).
// The handlers fill the view models from the node's own read model
// (node/catalog through node/views), its checker (node/check), its log
// and its federation, all read through Mount at every request, never
// over HTTP. Every page shares one layout: a skip link, the header
// navigation, <main> and a footer with the log's origin and head size.
//
// Words: what a page says is what was observed and when. No page may call
// a server safe, secure, audited, certified, approved, trusted or
// verified, and a change is shown in amber, never red; the tests render
// every page with log/awr's ForbiddenWord.
package desk
