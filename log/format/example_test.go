package format_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
)

func ExampleParseCosignature() {
	// The example line of c2sp.org/tlog-cosignature.
	s, err := format.ParseCosignature("— witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s %08x %d\n", s.Name, s.KeyID, s.Time)
	// Output: witness.example.com/w1 8d66cf3f 1679315147
}

func ExampleCheckConsistency() {
	// Two heads of one size with different roots, each as it was served (here, stand-ins for
	// two signed notes): the error keeps both, so they can be passed on as evidence.
	kept := format.SignedHead{Raw: []byte("kept note"), Size: 0, Root: format.EmptyRoot()}
	served := format.SignedHead{Raw: []byte("served note"), Size: 0, Root: format.LeafHash([]byte("x"))}
	err := format.CheckConsistency(kept, served, nil)
	var inc *format.InconsistencyError
	if errors.As(err, &inc) {
		fmt.Printf("%s / %s\n", inc.Smaller.Raw, inc.Larger.Raw)
	}
	// Output: kept note / served note
}

func ExamplePolicy_Check() {
	// Two witnesses, either of which is enough (keys made here from fixed seeds).
	pub := func(b byte) ed25519.PublicKey {
		return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32)).Public().(ed25519.PublicKey)
	}
	a, _ := keys.CosignatureVerifierKey("a.example/w", pub(1))
	b, _ := keys.CosignatureVerifierKey("b.example/w", pub(2))
	p, err := format.ParsePolicy([]byte("witness A " + a + "\nwitness B " + b + "\ngroup AB any A B\nquorum AB\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	c := format.Checkpoint{Origin: "log.example/log", Size: 1, Root: format.LeafHash([]byte("x"))}
	s, _ := format.SignCosignature("b.example/w", ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32)), c, 1700000000)
	cosigned, met := p.Check(c, []format.Cosignature{s})
	fmt.Println(p.Quorum, cosigned, met)
	// Output: AB [B] true
}
