package awr

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// NewID returns "urn:uuid:" and a random (version 4, RFC 9562 §5.4) UUID,
// the form AWR/2 document ids take.
func NewID() (string, error) {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return "", fmt.Errorf("making document id: %w", err)
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant 10
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return "urn:uuid:" + string(s[:]), nil
}
