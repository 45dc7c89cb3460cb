// Package views is the read model's views: the JSON and HTML view types the
// reading API, the desk pages and the node's other faces (/mcp, the market
// peer) share, and the builders that compute them from node/catalog values
// and a few small inputs (the clock, the peer view, the sandbox's runs).
//
// The types keep HISTOR's member names and orders: what they encode is on
// the wire. Nothing here serves HTTP; the routes that do read these views.
package views
