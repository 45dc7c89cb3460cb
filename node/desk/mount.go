package desk

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/histor-observer/histor/internal/httpx"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/check"
	"github.com/histor-observer/histor/node/views"
)

// Model is the crawl's read model as one request reads it.
type Model struct {
	// Catalog is the read model of the crawl. Required.
	Catalog *catalog.Catalog
	// PublicBase is the absolute URL the badge snippet and the About page
	// name; "" uses http(s)://<the request's Host> for the snippet.
	PublicBase string
	// Now is the clock of the servers' states. Required.
	Now func() time.Time
}

// Log is what the pages read of the label log: its heads for the layout,
// and the proof and leaves the Log page draws the tree from.
type Log interface {
	Latest() hlog.Head
	HeadAt(size uint64) (hlog.Head, error)
	EachEntry(start, end uint64, fn func(index uint64, label []byte) error) error
	InclusionProof(index, size uint64) ([][32]byte, error)
}

// Federation is what the pages read of the node's federation: its
// identity, its witness policy and the cosignatures collected, its witness
// and the peers whose heads it checked.
type Federation interface {
	// DID is this observer's did:key.
	DID() string
	// Cosigned is head's checkpoint with the cosignatures collected for
	// it; head's own checkpoint when there are none.
	Cosigned(head hlog.Head) []byte
	// Policy is the witness policy the checkpoints are submitted under;
	// nil without one.
	Policy() *format.Policy
	// Witness is the node's witness; nil when it witnesses no log.
	Witness() Witness
	// Peers are the last heads of the peers this node checked, one a
	// peer, in any order.
	Peers() []PeerHead
}

// Witness is what the Network page reads of the node's witness.
type Witness interface {
	// Evidence is the equivocation evidence held, in ID order, as many
	// bundles as /api/v1/evidence lists.
	Evidence() ([]HeldEvidence, error)
	// Logs are the origins of the logs it witnesses, sorted.
	Logs() []string
}

// HeldEvidence is one equivocation bundle the witness holds.
type HeldEvidence struct {
	ID, Origin string
	Kind       string // "same-size" or "failed-proof"
	Seen       time.Time
}

// PeerHead is the last head of a peer that this node proved consistent
// with every earlier one it checked.
type PeerHead struct {
	DID, Origin string
	Size        uint64
	Time        time.Time
	Cosigners   []string // the witnesses whose cosignatures verified
	// Clock is how far the peer's clock was from this node's; nil when
	// never measured.
	Clock *Clock
}

// Clock is one measure of a peer's clock against this node's.
type Clock struct {
	// Offset is the peer's clock minus this node's.
	Offset time.Duration
	// RTT is the exchange's round trip: the offset is known to within half
	// of it.
	RTT time.Duration
	// At is when it was measured, by this node's clock.
	At time.Time
}

// Mount is what the desk's handlers read of the node, at every request:
// the routes are made before the node opens its parts.
type Mount struct {
	// Log is the node's label log. Required to serve.
	Log Log
	// Model is the read model now; nil (or a nil Model) while the node
	// serves no crawl state.
	Model func() *Model
	// Sources are the peer view and the sandbox's runs now; nil: none.
	Sources func() views.Sources
	// Checker answers the /check form now; nil, or a nil Checker, answers
	// that the check is not available.
	Checker func() *check.Checker
	// Federation is the federation now; nil, or a func that returns
	// nil, when the node runs none.
	Federation func() Federation
	// Logger receives the failures answered 500 and the trees that could
	// not be drawn. Required to serve.
	Logger *slog.Logger
}

// Routes are the desk's pages and its static files, in the order the node
// lists them.
func Routes(m Mount) []httpx.Route {
	return []httpx.Route{
		{Pattern: "/", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveServers)},
		{Pattern: "/servers", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveServers)},
		{Pattern: "/s/{target_id}", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveServer)},
		{Pattern: "/changes", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveChanges)},
		{Pattern: "/changes/{change_id}", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveChange)},
		{Pattern: "/check", Methods: []string{http.MethodGet, http.MethodPost}, Handler: http.HandlerFunc(m.serveCheck)},
		{Pattern: "/network", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveNetwork)},
		{Pattern: "/about", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveAbout)},
		{Pattern: "/log", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveLog)},
		{Pattern: "/static/{file}", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveStatic)},
	}
}

// model is the read model now; nil while there is none.
func (m Mount) model() *Model {
	if m.Model == nil {
		return nil
	}
	return m.Model()
}

// sources are the server pages' other sources now.
func (m Mount) sources() views.Sources {
	if m.Sources == nil {
		return views.Sources{}
	}
	return m.Sources()
}

// checker is the checker now; nil when there is none.
func (m Mount) checker() *check.Checker {
	if m.Checker == nil {
		return nil
	}
	return m.Checker()
}

// federation is the federation now; nil when there is none.
func (m Mount) federation() Federation {
	if m.Federation == nil {
		return nil
	}
	return m.Federation()
}

// internal logs a failure and answers 500 without its details.
func (m Mount) internal(w http.ResponseWriter, r *http.Request, doing string, err error) {
	httpx.Internal(w, r, m.Logger, doing, err)
}
