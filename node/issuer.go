package node

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/keys"
)

// issuerDoc is the /api/v1/issuer answer: HISTOR's members first (did,
// publicKeyHex, name, profile, profileUrl, warden, patternSet, recordSet,
// logType, source), then what a C2SP client needs to check /log/.
type issuerDoc struct {
	DID          string  `json:"did"`
	PublicKeyHex string  `json:"publicKeyHex"`
	Name         string  `json:"name"`
	Profile      string  `json:"profile"`
	ProfileURL   string  `json:"profileUrl"`
	Warden       *string `json:"warden"`     // no pattern scanner wired yet
	PatternSet   *string `json:"patternSet"` // SRI of the current pattern set, once there is one
	RecordSet    *string `json:"recordSet"`  // SRI of the current record set, once there is one
	LogType      string  `json:"logType"`
	Source       string  `json:"source"`
	LogOrigin    string  `json:"logOrigin"`
	LogVkey      string  `json:"logVkey"`     // signed-note verifier key of checkpoints
	WitnessName  string  `json:"witnessName"` // key name of the witness's cosignatures
	WitnessVkey  string  `json:"witnessVkey"` // cosignature/v1 verifier key
	URL          string  `json:"url,omitempty"`
}

const (
	profileURL = "https://github.com/alexar76/aicom/blob/main/awr/adoption/mcp-trust-label/PROFILE.md"
	sourceURL  = "https://github.com/histor-observer/histor"
	logType    = "RFC 9162 Merkle tree over JCS(label); STH type histor.sth/v1"
)

// newIdentity derives the node's keys from its seed and renders the issuer
// answer once; it never changes while the node runs.
func newIdentity(cfg Config, seed *keys.Seed) (identity, error) {
	logKey := seed.LogKey()
	logPub := logKey.Public().(ed25519.PublicKey)
	witnessPub := seed.WitnessKey().Public().(ed25519.PublicKey)
	did := awr.DIDKey(logPub)
	logVkey, err := keys.NoteVerifierKey(cfg.LogOrigin, logPub)
	if err != nil {
		return identity{}, fmt.Errorf("making log verifier key: %w", err)
	}
	witnessVkey, err := keys.CosignatureVerifierKey(cfg.WitnessName, witnessPub)
	if err != nil {
		return identity{}, fmt.Errorf("making witness verifier key: %w", err)
	}
	doc, err := json.Marshal(issuerDoc{
		DID: did, PublicKeyHex: hex.EncodeToString(logPub), Name: "histor",
		Profile: "MTL/1", ProfileURL: profileURL, LogType: logType, Source: sourceURL,
		LogOrigin: cfg.LogOrigin, LogVkey: logVkey,
		WitnessName: cfg.WitnessName, WitnessVkey: witnessVkey, URL: cfg.PublicURL,
	})
	if err != nil {
		return identity{}, fmt.Errorf("encoding issuer: %w", err)
	}
	return identity{logKey: logKey, did: did, issuerDoc: doc}, nil
}
