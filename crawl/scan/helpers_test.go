package scan

import (
	"crypto/sha256"
	"encoding/base64"
)

// sri is written out here rather than borrowed, so the digest tests check the
// package against an independent computation.
func sri(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}
