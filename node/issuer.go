package node

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/keys"
)

// issuerDoc is the /api/v1/issuer answer: HISTOR's members first (did,
// publicKeyHex, name, profile, profileUrl, warden, patternSet, recordSet,
// logType, source), then what a C2SP client needs to check /log/.
type issuerDoc struct {
	DID          string `json:"did"`
	PublicKeyHex string `json:"publicKeyHex"`
	Name         string `json:"name"`
	Profile      string `json:"profile"`
	ProfileURL   string `json:"profileUrl"`
	// Warden names the code that computes pattern and record matches, as
	// package@version; HISTOR names its WARDEN sidecar so
	// ("@aimarket/warden@0.13.0"), this node the Go scanner built into it.
	Warden string `json:"warden"`
	// PatternSet and RecordSet are the SRI digests of the sets the crawler
	// scans with, as its labels cite them; their bodies are served under
	// /api/v1/pattern-sets/ and /api/v1/record-sets/ once a label does.
	PatternSet  string `json:"patternSet"`
	RecordSet   string `json:"recordSet"`
	LogType     string `json:"logType"`
	Source      string `json:"source"`
	LogOrigin   string `json:"logOrigin"`
	LogVkey     string `json:"logVkey"`     // signed-note verifier key of checkpoints
	WitnessName string `json:"witnessName"` // key name of the witness's cosignatures
	WitnessVkey string `json:"witnessVkey"` // cosignature/v1 verifier key
	URL         string `json:"url,omitempty"`
}

const (
	profileURL = "https://github.com/alexar76/aicom/blob/main/awr/adoption/mcp-trust-label/PROFILE.md"
	sourceURL  = "https://github.com/histor-observer/histor"
	logType    = "RFC 9162 Merkle tree over JCS(label); STH type histor.sth/v1"
	// scannerPackage is the package whose code runs the pattern scan and
	// the name-threat match.
	scannerPackage = "github.com/histor-observer/histor/crawl/scan"
)

// newIdentity derives the node's keys from its seed.
func newIdentity(cfg Config, seed *keys.Seed) (identity, error) {
	logKey := seed.LogKey()
	logPub := logKey.Public().(ed25519.PublicKey)
	witnessPub := seed.WitnessKey().Public().(ed25519.PublicKey)
	logVkey, err := keys.NoteVerifierKey(cfg.LogOrigin, logPub)
	if err != nil {
		return identity{}, fmt.Errorf("making log verifier key: %w", err)
	}
	witnessVkey, err := keys.CosignatureVerifierKey(cfg.WitnessName, witnessPub)
	if err != nil {
		return identity{}, fmt.Errorf("making witness verifier key: %w", err)
	}
	return identity{logKey: logKey, did: awr.DIDKey(logPub), logVkey: logVkey, witnessVkey: witnessVkey, aimarketKey: seed.AIMarketKey()}, nil
}

// renderIssuer renders the issuer answer once the crawler has loaded its
// sets; it never changes while the node runs.
func renderIssuer(cfg Config, id identity, ps *scan.PatternSet, rs *scan.RecordSet) ([]byte, error) {
	logPub := id.logKey.Public().(ed25519.PublicKey)
	doc, err := json.Marshal(issuerDoc{
		DID: id.did, PublicKeyHex: hex.EncodeToString(logPub), Name: "histor",
		Profile: "MTL/1", ProfileURL: profileURL,
		Warden: scannerPackage + "@" + Version, PatternSet: ps.Digest(), RecordSet: rs.Digest(),
		LogType: logType, Source: sourceURL,
		LogOrigin: cfg.LogOrigin, LogVkey: id.logVkey,
		WitnessName: cfg.WitnessName, WitnessVkey: id.witnessVkey, URL: cfg.PublicURL,
	})
	if err != nil {
		return nil, fmt.Errorf("encoding issuer: %w", err)
	}
	return doc, nil
}
