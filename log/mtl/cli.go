package mtl

import (
	"fmt"
	"io"
)

// maxInput bounds what RunDigest reads; it is canon's default size bound, so
// a larger input would be refused anyway.
const maxInput = 4 << 20

// RunDigest is `histor digest`: it reads a tools/list result (or a JSON-RPC
// response carrying one, or a bare tools array) from in and prints its
// MTL/1 tool-set digest alone on stdout. It returns 0 on success; 1 when
// MTL/1 or canon refuses the input, after printing "<CODE>: <reason>" on
// stderr; 2 when the input could not be read.
func RunDigest(in io.Reader, stdout, stderr io.Writer) int {
	b, err := io.ReadAll(io.LimitReader(in, maxInput+1))
	if err != nil {
		fmt.Fprintf(stderr, "reading tools/list result: %v\n", err)
		return 2
	}
	sri, err := DigestListResult(b)
	if err != nil {
		if Code(err) == "" {
			fmt.Fprintf(stderr, "digesting tool set: %v\n", err)
			return 2
		}
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintln(stdout, sri)
	return 0
}
