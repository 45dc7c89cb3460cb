package witness_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/witness"
)

func ExampleWitness_AddCheckpoint() {
	dir, _ := os.MkdirTemp("", "witness")
	defer os.RemoveAll(dir)

	// A log: its key, and a checkpoint of a one-entry tree.
	skey, vkey, _ := note.GenerateKey(rand.Reader, "example.com/log")
	signer, _ := note.NewSigner(skey)
	verifier, _ := note.NewVerifier(vkey)
	root := tlog.RecordHash([]byte("entry 0"))
	checkpoint, _ := note.Sign(&note.Note{Text: "example.com/log\n1\n" + base64.StdEncoding.EncodeToString(root[:]) + "\n"}, signer)

	_, key, _ := ed25519.GenerateKey(rand.Reader)
	w, err := witness.New(witness.Config{
		Dir:  filepath.Join(dir, "witness"),
		Name: "example.com/witness",
		Key:  key,
		Logs: map[string]note.Verifier{"example.com/log": verifier},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()

	// The first submission, from old size 0, is cosigned; the same again from 0 is told the
	// size cosigned last.
	body := witness.Request{Old: 0, Checkpoint: checkpoint}.Marshal()
	for range 2 {
		res, err := w.AddCheckpoint(context.Background(), body)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.Status, res.Outcome)
	}
	// Output:
	// 200 cosigned
	// 409 conflict
}
