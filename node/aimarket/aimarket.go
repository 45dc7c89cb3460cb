// Package aimarket is the node's AIMarket peer: HISTOR's
// /.well-known/ai-market.json, manifest, search and invoke, with its three
// free capabilities answered by the same code as /api/v1/check,
// /api/v1/servers and /api/v1/changes (the checker of node/check and the
// views of node/views). Every document is signed with the node's AIMarket
// key over the strings an AIMarket hub computes (package receipt), so the
// bodies are written with receipt.PyJSON: a price of 0 must read 0.0, as
// Python reads it. It holds the peer's keys and its invoke limiter, and
// reads the node only through Mount.
package aimarket

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

// MaxInvokeBytes bounds an invoke's body, as HISTOR's read_json does
// (2 MiB); a larger one is answered 413. It is the peer's own bound: the
// histor.check@v1 input inside the body is held to check.MaxBodyBytes
// again by the checker's parser.
const MaxInvokeBytes = 2 << 20

const (
	product  = "histor"
	protocol = "aimarket/2"
	peerName = "histor"
	category = "mcp-security"
	// Bounds of the capabilities, HISTOR's.
	maxServerMatches     = 10
	defaultChangesInvoke = 20
	maxChangesInvoke     = 50
	maxChangeItems       = 20
	cacheDoc             = "public, max-age=300"
	// receiptTimeLayout is a receipt's timestamp, HISTOR's: UTC, whole
	// seconds, as /check writes its times.
	receiptTimeLayout = "2006-01-02T15:04:05Z"
)

// capabilities are the capabilities in HISTOR's order: a hub's admission
// probe tries the first free ones with an input built from their schemas,
// and changes answers any input, so it goes first.
func capabilities() []map[string]any {
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

// Config is what a Peer needs.
type Config struct {
	// Key is the node's AIMarket key, which signs every document, answer
	// and receipt; HISTOR keeps it apart from the log key. Required.
	Key ed25519.PrivateKey
	// DID is the label issuer's, named in .well-known.
	DID string
	// PublicURL prefixes the peer's links; "" uses http://<the request's
	// Host>.
	PublicURL string
	// TrustedProxies are the peers whose X-Forwarded-For names the client.
	TrustedProxies []netip.Prefix
	// InvokesPerMinute is the most server and changes invokes one client
	// may make in any minute (check invokes count against the checker's
	// own limit); zero or less: no limit.
	InvokesPerMinute int
	// MaxClients bounds the clients the invoke limit tracks at once.
	MaxClients int
	// Now is the clock of manifests and receipts; nil: time.Now.
	Now func() time.Time
}

// Peer is the AIMarket peer's keys and its invoke limiter; one per node.
type Peer struct {
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

// New makes the peer cfg describes.
func New(cfg Config) (*Peer, error) {
	p := &Peer{
		key: cfg.Key, pubB64: receipt.PublicKeyB64(cfg.Key.Public().(ed25519.PublicKey)), did: cfg.DID,
		base: strings.TrimSuffix(cfg.PublicURL, "/"), trusted: cfg.TrustedProxies, now: cfg.Now,
	}
	if p.now == nil {
		p.now = time.Now
	}
	if cfg.InvokesPerMinute > 0 {
		var err error
		p.invokes, err = ratelimit.New[httpx.ClientKey](ratelimit.Config{Events: cfg.InvokesPerMinute, Window: time.Minute, MaxKeys: cfg.MaxClients})
		if err != nil {
			return nil, fmt.Errorf("making invoke limiter: %w", err)
		}
	}
	return p, nil
}

// baseURL is the absolute prefix of the peer's links.
func (p *Peer) baseURL(r *http.Request) string {
	if p.base != "" {
		return p.base
	}
	return "http://" + r.Host
}

// wellKnown is the .well-known document, signed whole.
func (p *Peer) wellKnown(base string) (map[string]any, error) {
	caps := capabilities()
	ids := make([]any, len(caps))
	for i, c := range caps {
		ids[i] = c["capability_id"]
	}
	doc := map[string]any{
		"protocol": protocol, "protocol_versions": []any{"v2"}, "name": peerName,
		"hub_url": base, "signer_public_key": p.pubB64, "manifest_url": base + "/ai-market/v2/manifest",
		"mcp_endpoint": base + "/ai-market/v2/invoke", "provider_pubkey": p.pubB64,
		"capabilities": ids, "capabilities_count": len(caps),
		"categories": []any{category, "transparency-log", "tool-definitions", "awr", "mtl"},
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
func (p *Peer) tools(base string) []any {
	caps := capabilities()
	out := make([]any, len(caps))
	for i, c := range caps {
		c["product_id"], c["invoke_url"], c["publisher_id"] = product, base+"/ai-market/v2/invoke", product
		c["provider_pubkey"], c["category"], c["output_schema"] = p.pubB64, category, map[string]any{"type": "object"}
		out[i] = c
	}
	return out
}

// manifest is the manifest document, signed over the hub's manifest
// canonical.
func (p *Peer) manifest(base string) (map[string]any, error) {
	tools := p.tools(base)
	doc := map[string]any{
		"protocol": protocol, "protocol_version": "v2", "name": peerName, "hub_url": base,
		"total_capabilities": len(tools), "capabilities_count": len(tools),
		"generated_at": pyISOTime(p.now()), "tools": tools, "by_hub": map[string]any{},
	}
	canonical, err := receipt.ManifestCanonical(doc)
	if err != nil {
		return nil, err
	}
	doc["signature"] = receipt.SignatureBlock(p.key, canonical)
	return doc, nil
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

// invokeReply is HISTOR's reply to an invoke: the result, the signature
// over ResultCanonical, and the interop receipt a hub verifies.
func (p *Peer) invokeReply(result any, capability string, input map[string]any) (map[string]any, error) {
	canonical, err := receipt.ResultCanonical(result, capability, product, input)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, 16)
	rand.Read(nonce)
	rec := receipt.HubReceipt{
		Nonce: "0x" + hex.EncodeToString(nonce), ProductID: product, CapabilityID: capability,
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
