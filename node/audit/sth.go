package audit

import (
	"crypto/ed25519"
	"fmt"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
)

// verifyHead parses a histor.sth/v1 document strictly and checks its signature under pub.
func verifyHead(doc []byte, pub ed25519.PublicKey) (*head, error) {
	s, err := format.VerifySTH(doc, pub)
	if err != nil {
		return nil, err
	}
	return &head{Raw: doc, Log: s.Log, Size: s.TreeSize, Root: s.Root}, nil
}

// verifyKeptHead checks a kept head against the key it names itself.
func verifyKeptHead(doc []byte) (*head, error) {
	s, err := format.ParseSTH(doc)
	if err != nil {
		return nil, err
	}
	pub, err := awr.ParseDIDKey(s.Log)
	if err != nil {
		return nil, fmt.Errorf("the kept head's log %q: %w", s.Log, err)
	}
	return verifyHead(doc, pub)
}
