package format

import (
	"bytes"
	"crypto/ed25519"

	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/keys"
)

// SignText signs text as a signed note under key name name with key: the
// shape of every note this project writes but checkpoints (observer
// descriptors, observation digests).
func SignText(name string, key ed25519.PrivateKey, text string) ([]byte, error) {
	s, err := keys.NoteSigner(name, key)
	if err != nil {
		return nil, err
	}
	return note.Sign(&note.Note{Text: text}, s)
}

// NoteText is the text of a signed note, before its signature block, with
// its final newline; ok is false when msg has no signature block. Nothing
// is verified: a caller parses the text to learn whose note it claims to
// be before paying for the signature check.
func NoteText(msg []byte) (text string, ok bool) {
	t, _, ok := bytes.Cut(msg, []byte("\n\n"))
	if !ok {
		return "", false
	}
	return string(t) + "\n", true
}
