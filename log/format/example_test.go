package format_test

import (
	"errors"
	"fmt"

	"github.com/histor-observer/histor/log/format"
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
