package keys_test

import (
	"crypto/ed25519"
	"fmt"
	"log"
	"strings"

	"github.com/histor-observer/histor/log/keys"
	"golang.org/x/mod/sumdb/note"
)

// A checkpoint signed with NoteSigner opens under NoteVerifierKey with the
// standard sumdb note package.
func ExampleNoteVerifierKey() {
	seed, err := keys.NewSeed(make([]byte, keys.SeedSize))
	if err != nil {
		log.Fatal(err)
	}
	priv := seed.LogKey()
	vkey, err := keys.NoteVerifierKey("example.com/log", priv.Public().(ed25519.PublicKey))
	if err != nil {
		log.Fatal(err)
	}
	signer, err := keys.NoteSigner("example.com/log", priv)
	if err != nil {
		log.Fatal(err)
	}
	signed, err := note.Sign(&note.Note{Text: "example.com/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"}, signer)
	if err != nil {
		log.Fatal(err)
	}
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		log.Fatal(err)
	}
	n, err := note.Open(signed, note.VerifierList(verifier))
	if err != nil {
		log.Fatal(err)
	}
	origin, _, _ := strings.Cut(n.Text, "\n")
	fmt.Println(origin, len(n.Sigs))
	// Output: example.com/log 1
}
