package node

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/log/receipt"
	"github.com/histor-observer/histor/node/ratelimit"
)

// The AIMarket peer: HISTOR's /.well-known/ai-market.json, manifest,
// search and invoke, with its three free capabilities answered by the same
// code as /api/v1/check, /api/v1/servers/<id> and /api/v1/changes. Every
// document is signed with the node's AIMarket key over the strings an
// AIMarket hub computes (package receipt), so the bodies are written with
// receipt.PyJSON: a price of 0 must read 0.0, as Python reads it.

const (
	aimarketProduct  = "histor"
	aimarketProtocol = "aimarket/2"
	aimarketName     = "histor"
	aimarketCategory = "mcp-security"
	// Bounds of the capabilities, HISTOR's.
	maxServerMatches     = 10
	defaultChangesInvoke = 20
	maxChangesInvoke     = 50
	maxChangeItems       = 20
	cacheAIMarketDoc     = "public, max-age=300"
	// receiptTimeLayout is a receipt's timestamp, HISTOR's: UTC, whole
	// seconds, as /check writes its times.
	receiptTimeLayout = "2006-01-02T15:04:05Z"
)

// aimarketCaps are the capabilities in HISTOR's order: a hub's admission
// probe tries the first free ones with an input built from their schemas,
// and changes answers any input, so it goes first.
func aimarketCaps() []map[string]any {
	str := map[string]any{"type": "string"}
	return []map[string]any{{
		"capability_id": "histor.changes@v1",
		"name":          "Recent MCP tool-definition changes",
		"description": "The newest tool-definition changes this observer saw at remote MCP endpoints of the registry it reads: " +
			"tools added, removed or modified, outside addresses that newly appeared, and a link to each full diff.",
		"price_per_call_usd": 0.0,
		"input_schema": map[string]any{"type": "object", "properties": map[string]any{
			"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": maxChangesInvoke}}},
	}, {
		"capability_id": "histor.check@v1",
		"name":          "Check an MCP tool set against the log",
		"description": "Send an MCP endpoint (or registry name) and the tools/list you received, or its MTL/1 digest. " +
			"Returns, signed: whether this observer saw the same set there, since when, earlier sets, and the pattern " +
			"matches in it. It reports what was advertised and says nothing of what a server is worth.",
		"price_per_call_usd": 0.0,
		"input_schema": map[string]any{"type": "object", "properties": map[string]any{
			"endpoint":      map[string]any{"type": "string", "description": "the MCP endpoint URL"},
			"name":          map[string]any{"type": "string", "description": "or the server's registry name"},
			"tools":         map[string]any{"type": "array", "description": "the tools array of the tools/list result you received"},
			"toolSetDigest": map[string]any{"type": "string", "description": "or its MTL/1 tool-set digest (sha256-…)"},
			"contribute":    map[string]any{"type": "boolean", "description": "add (endpoint, digest, day) to a public count"},
		}},
	}, {
		"capability_id": "histor.server@v1",
		"name":          "MCP server observation record",
		"description": "This observer's record of one MCP endpoint (or every endpoint of a registry name): tool-set digest, " +
			"tool count, first pinned, last observed, unchanged since, change count and last status, with links to the " +
			"full record and its labels.",
		"price_per_call_usd": 0.0,
		"input_schema":       map[string]any{"type": "object", "properties": map[string]any{"endpoint": str, "name": str}},
	}}
}

// aimarketPeer is the peer's keys and the invoke limiter; one per API.
type aimarketPeer struct {
	key     ed25519.PrivateKey
	pubB64  string
	did     string // the label issuer's, named in .well-known
	base    string // PublicURL without a trailing slash; "" uses the request's host
	trusted []netip.Prefix
	now     func() time.Time
	// invokes limits server and changes calls per client (check has its
	// own limit); nil: none.
	invokes *ratelimit.Limiter[httpx.ClientKey]
}

func newAIMarketPeer(cfg Config, key ed25519.PrivateKey, did string) (*aimarketPeer, error) {
	p := &aimarketPeer{
		key: key, pubB64: receipt.PublicKeyB64(key.Public().(ed25519.PublicKey)), did: did,
		base: strings.TrimSuffix(cfg.PublicURL, "/"), trusted: cfg.TrustedProxies, now: cfg.Now,
	}
	if p.now == nil {
		p.now = time.Now
	}
	if cfg.ChecksPerMinute > 0 {
		var err error
		p.invokes, err = ratelimit.New[httpx.ClientKey](ratelimit.Config{Events: cfg.ChecksPerMinute, Window: time.Minute, MaxKeys: cfg.MaxCheckClients})
		if err != nil {
			return nil, fmt.Errorf("making invoke limiter: %w", err)
		}
	}
	return p, nil
}

// baseURL is the absolute prefix of the peer's links.
func (p *aimarketPeer) baseURL(r *http.Request) string {
	if p.base != "" {
		return p.base
	}
	return "http://" + r.Host
}

// peer answers 503 itself when the API has no AIMarket peer.
func (a *api) peer(w http.ResponseWriter) *aimarketPeer {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if a.agent == nil {
		a.fail(w, http.StatusServiceUnavailable, "this node has no AIMarket peer")
	}
	return a.agent
}

// writePy answers doc as PyJSON (compact).
func (a *api) writePy(w http.ResponseWriter, r *http.Request, doc any) {
	body, err := receipt.PyJSON(doc, receipt.Compact)
	if err != nil {
		a.internal(w, r, "encoding an AIMarket answer", err)
		return
	}
	writeBody(w, "application/json", body)
}

// serveWellKnown answers /.well-known/ai-market.json, signed whole.
func (a *api) serveWellKnown(w http.ResponseWriter, r *http.Request) {
	p := a.peer(w)
	if p == nil {
		return
	}
	doc, err := p.wellKnown(p.baseURL(r))
	if err != nil {
		a.internal(w, r, "signing .well-known", err)
		return
	}
	w.Header().Set("Cache-Control", cacheAIMarketDoc)
	a.writePy(w, r, doc)
}

func (p *aimarketPeer) wellKnown(base string) (map[string]any, error) {
	caps := aimarketCaps()
	ids := make([]any, len(caps))
	for i, c := range caps {
		ids[i] = c["capability_id"]
	}
	doc := map[string]any{
		"protocol": aimarketProtocol, "protocol_versions": []any{"v2"}, "name": aimarketName,
		"hub_url": base, "signer_public_key": p.pubB64, "manifest_url": base + "/ai-market/v2/manifest",
		"mcp_endpoint": base + "/ai-market/v2/invoke", "provider_pubkey": p.pubB64,
		"capabilities": ids, "capabilities_count": len(caps),
		"categories": []any{aimarketCategory, "transparency-log", "tool-definitions", "awr", "mtl"},
		"issuer_did": p.did,
	}
	canonical, err := receipt.ObjectCanonical(doc)
	if err != nil {
		return nil, err
	}
	doc["signature"] = receipt.SignatureBlock(p.key, string(canonical))
	return doc, nil
}

// tools are the capabilities as the manifest and search list them.
func (p *aimarketPeer) tools(base string) []any {
	caps := aimarketCaps()
	out := make([]any, len(caps))
	for i, c := range caps {
		c["product_id"], c["invoke_url"], c["publisher_id"] = aimarketProduct, base+"/ai-market/v2/invoke", aimarketProduct
		c["provider_pubkey"], c["category"], c["output_schema"] = p.pubB64, aimarketCategory, map[string]any{"type": "object"}
		out[i] = c
	}
	return out
}

// serveManifest answers /ai-market/v2/manifest, signed over the hub's
// manifest canonical.
func (a *api) serveManifest(w http.ResponseWriter, r *http.Request) {
	p := a.peer(w)
	if p == nil {
		return
	}
	base, tools := p.baseURL(r), p.tools(p.baseURL(r))
	doc := map[string]any{
		"protocol": aimarketProtocol, "protocol_version": "v2", "name": aimarketName, "hub_url": base,
		"total_capabilities": len(tools), "capabilities_count": len(tools),
		"generated_at": pyISOTime(p.now()), "tools": tools, "by_hub": map[string]any{},
	}
	canonical, err := receipt.ManifestCanonical(doc)
	if err != nil {
		a.internal(w, r, "signing the manifest", err)
		return
	}
	doc["signature"] = receipt.SignatureBlock(p.key, canonical)
	w.Header().Set("Cache-Control", cacheAIMarketDoc)
	a.writePy(w, r, doc)
}

// pyISOTime is Python's datetime.isoformat of a UTC time with "Z":
// microseconds, or none when they are zero.
func pyISOTime(t time.Time) string {
	t = t.UTC().Truncate(time.Microsecond)
	if t.Nanosecond() == 0 {
		return t.Format("2006-01-02T15:04:05Z")
	}
	return t.Format("2006-01-02T15:04:05.000000Z")
}

// serveAIMarketSearch answers /ai-market/v2/search?q=: the capabilities
// whose id, or lowercased description, holds the lowercased q.
func (a *api) serveAIMarketSearch(w http.ResponseWriter, r *http.Request) {
	p := a.peer(w)
	if p == nil {
		return
	}
	q := httpx.String{Name: "q"}
	if err := httpx.ReadStrings(r.URL.RawQuery, &q); err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	needle := strings.TrimSpace(strings.ToLower(q.Value))
	found := []any{}
	for _, t := range p.tools(p.baseURL(r)) {
		c := t.(map[string]any)
		id, desc := c["capability_id"].(string), strings.ToLower(c["description"].(string))
		if needle == "" || strings.Contains(id, needle) || strings.Contains(desc, needle) {
			found = append(found, c)
		}
	}
	a.writePy(w, r, map[string]any{"total": len(found), "tools": found})
}

// invokeReply is HISTOR's reply to an invoke: the result, the signature
// over ResultCanonical, and the interop receipt a hub verifies.
func (p *aimarketPeer) invokeReply(result any, capability string, input map[string]any) (map[string]any, error) {
	canonical, err := receipt.ResultCanonical(result, capability, aimarketProduct, input)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, 16)
	rand.Read(nonce)
	rec := receipt.HubReceipt{
		Nonce: "0x" + hex.EncodeToString(nonce), ProductID: aimarketProduct, CapabilityID: capability,
		PriceUSD: 0, Timestamp: p.now().UTC().Format(receiptTimeLayout), Success: true,
	}
	return map[string]any{
		"ok": true, "result": result, "provider_pubkey": p.pubB64,
		"receipt": rec.Document(p.key), "signature": receipt.SignString(p.key, string(canonical)),
	}, nil
}

// generic turns our own JSON into the values PyJSON writes, numbers kept
// as their literals.
func generic(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("reading our own answer: %w", err)
	}
	return v, nil
}
