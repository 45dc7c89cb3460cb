package receipt

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
)

// HubReceipt is the interop receipt of one AIMarket invoke: the fields an
// AIMarket hub's verify_receipt_signature reads, signed (as a v1 block,
// with no version member) over HubReceiptCanonical.
type HubReceipt struct {
	Nonce        string  // "0x" and 32 hex digits, fresh per reply
	ProductID    string  // "histor"
	CapabilityID string  // e.g. "histor.check@v1"
	PriceUSD     float64 // 0 for a free capability, written 0.0
	Timestamp    string  // UTC, whole seconds, "Z"
	Success      bool
	LatencyMS    int64
}

// HubReceiptCanonical is the string a hub verifies a receipt over:
// nonce:…|product_id:…|capability_id:…|price_usd:…|timestamp:…|success:1|latency_ms:…,
// each value as Python's f-string writes it (so a price of 0 is "0.0").
func HubReceiptCanonical(r HubReceipt) string {
	price, _ := appendPyFloat(nil, r.PriceUSD)
	success := 0
	if r.Success {
		success = 1
	}
	return "nonce:" + r.Nonce + "|product_id:" + r.ProductID + "|capability_id:" + r.CapabilityID +
		"|price_usd:" + string(price) + "|timestamp:" + r.Timestamp + "|success:" + strconv.Itoa(success) +
		"|latency_ms:" + strconv.FormatInt(r.LatencyMS, 10)
}

// Document is the receipt as it goes on the wire, its signature block
// included; the price is a float64 so PyJSON writes 0.0.
func (r HubReceipt) Document(key ed25519.PrivateKey) map[string]any {
	success := 0
	if r.Success {
		success = 1
	}
	return map[string]any{
		"nonce": r.Nonce, "product_id": r.ProductID, "capability_id": r.CapabilityID,
		"price_usd": r.PriceUSD, "timestamp": r.Timestamp, "success": success, "latency_ms": r.LatencyMS,
		"signature": map[string]any{"algorithm": "ed25519", "value": SignString(key, HubReceiptCanonical(r))},
	}
}

// ResultCanonical is the string an invoke's answer signature covers:
// json.dumps({"capability_id", "product_id", "input_sha256", "result"},
// compact, sorted), input_sha256 being the hex SHA-256 of the input the
// caller sent written the same way ({} when it sent none).
func ResultCanonical(result any, capabilityID, productID string, input map[string]any) ([]byte, error) {
	if input == nil {
		input = map[string]any{}
	}
	in, err := PyJSON(input, Compact)
	if err != nil {
		return nil, fmt.Errorf("encoding the invoke input: %w", err)
	}
	sum := sha256.Sum256(in)
	return PyJSON(map[string]any{
		"capability_id": capabilityID, "product_id": productID,
		"input_sha256": hex.EncodeToString(sum[:]), "result": result,
	}, Compact)
}

// ObjectCanonical is what a whole signed document (the .well-known one)
// is signed over: every member but signature, compact and sorted.
func ObjectCanonical(doc map[string]any) ([]byte, error) {
	body := make(map[string]any, len(doc))
	for k, v := range doc {
		if k != "signature" {
			body[k] = v
		}
	}
	return PyJSON(body, Compact)
}

// ManifestCanonical is the string a hub verifies a manifest over; tools
// and by_hub are covered by the SHA-256 of their json.dumps with the
// default separators, so a relay cannot retouch a price under a valid
// signature.
func ManifestCanonical(m map[string]any) (string, error) {
	tools, byHub := m["tools"], m["by_hub"]
	if tools == nil {
		tools = []any{}
	}
	if byHub == nil {
		byHub = map[string]any{}
	}
	th, err := PyJSON(tools, PyDefault)
	if err != nil {
		return "", fmt.Errorf("encoding manifest tools: %w", err)
	}
	bh, err := PyJSON(byHub, PyDefault)
	if err != nil {
		return "", fmt.Errorf("encoding manifest by_hub: %w", err)
	}
	count, err := PyJSON(m["capabilities_count"], Compact)
	if err != nil {
		return "", fmt.Errorf("encoding manifest count: %w", err)
	}
	ts, tb := sha256.Sum256(th), sha256.Sum256(bh)
	gen, _ := m["generated_at"].(string)
	version, ok := m["protocol_version"].(string)
	if !ok {
		version = "v1"
	}
	return "capabilities_count:" + string(count) + "|generated_at:" + gen + "|protocol_version:" + version +
		"|tools_hash:" + hex.EncodeToString(ts[:]) + "|by_hub_hash:" + hex.EncodeToString(tb[:]), nil
}

// SignString is a hub signature value: standard, padded base64 of the
// Ed25519 signature over the UTF-8 of s.
func SignString(key ed25519.PrivateKey, s string) string {
	return base64.StdEncoding.EncodeToString(ed25519.Sign(key, []byte(s)))
}

// SignatureBlock is the {algorithm, public_key, value} block of a
// .well-known document or a manifest.
func SignatureBlock(key ed25519.PrivateKey, canonical string) map[string]any {
	return map[string]any{
		"algorithm":  "ed25519",
		"public_key": PublicKeyB64(key.Public().(ed25519.PublicKey)),
		"value":      SignString(key, canonical),
	}
}

// PublicKeyB64 is how AIMarket names a key: standard, padded base64 of the
// raw 32 bytes.
func PublicKeyB64(pub ed25519.PublicKey) string { return base64.StdEncoding.EncodeToString(pub) }
