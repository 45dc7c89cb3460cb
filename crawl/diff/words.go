package diff

import (
	"strings"
	"unicode"
)

// MaxWordTokens bounds the tokens on either side of the differing middle of
// two texts that the LCS runs over; its table is (n+1)×(m+1) uint16 cells, so
// at most about 2 MB. Beyond it the middle is reported as one deletion and one
// insertion, which is still exact, only coarser.
const MaxWordTokens = 1000

// Op is a word-diff operation.
type Op string

// Word-diff operations, spelt as HISTOR's change records spell them.
const (
	Equal  Op = "="
	Delete Op = "-"
	Insert Op = "+"
)

// WordOp is one run of a word diff. Concatenating the Equal and Delete runs
// gives the old text; Equal and Insert runs give the new one.
type WordOp struct {
	Op   Op
	Text string
}

// Words diffs two texts over tokens that are either a run of whitespace or a
// run of anything else, so whitespace is kept and the texts can be rebuilt.
// Adjacent runs never share an Op, and in a replaced stretch the deletion
// comes first.
func Words(before, after string) []WordOp {
	a, b := tokens(before), tokens(after)
	p := commonPrefix(a, b)
	s := commonSuffix(a[p:], b[p:])
	var w opWriter
	w.add(Equal, a[:p]...)
	midA, midB := a[p:len(a)-s], b[p:len(b)-s]
	if len(midA) > MaxWordTokens || len(midB) > MaxWordTokens {
		w.add(Delete, midA...)
		w.add(Insert, midB...)
	} else {
		lcs(&w, midA, midB)
	}
	w.add(Equal, a[len(a)-s:]...)
	return w.result()
}

// tokens splits s into whitespace and non-whitespace runs.
func tokens(s string) []string {
	var out []string
	start := 0
	prevSpace := false
	for i, r := range s {
		space := unicode.IsSpace(r)
		if i > start && space != prevSpace {
			out = append(out, s[start:i])
			start = i
		}
		prevSpace = space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func commonPrefix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func commonSuffix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return n
}

// lcs writes the diff of a and b from a longest common subsequence table
// over suffixes, walking forward and preferring deletions on ties.
func lcs(w *opWriter, a, b []string) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		w.add(Delete, a...)
		w.add(Insert, b...)
		return
	}
	cols := m + 1
	t := make([]uint16, (n+1)*cols)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			switch {
			case a[i] == b[j]:
				t[i*cols+j] = t[(i+1)*cols+j+1] + 1
			default:
				t[i*cols+j] = max(t[(i+1)*cols+j], t[i*cols+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			w.add(Equal, a[i])
			i, j = i+1, j+1
		case t[(i+1)*cols+j] >= t[i*cols+j+1]:
			w.add(Delete, a[i])
			i++
		default:
			w.add(Insert, b[j])
			j++
		}
	}
	w.add(Delete, a[i:]...)
	w.add(Insert, b[j:]...)
}

// opWriter merges runs. Tokens are collected per run and joined once at
// the end, so a long run costs linear time. A deletion that follows a
// deletion and an insertion with no equal run between them joins the
// deletion, so a replaced stretch reads "-old +new".
type opWriter struct {
	runs []run
}

type run struct {
	op    Op
	parts []string
}

func (w *opWriter) add(op Op, toks ...string) {
	for _, t := range toks {
		w.add1(op, t)
	}
}

func (w *opWriter) add1(op Op, tok string) {
	n := len(w.runs)
	switch {
	case n > 0 && w.runs[n-1].op == op:
		w.runs[n-1].parts = append(w.runs[n-1].parts, tok)
	case op == Delete && n > 1 && w.runs[n-1].op == Insert && w.runs[n-2].op == Delete:
		w.runs[n-2].parts = append(w.runs[n-2].parts, tok)
	default:
		w.runs = append(w.runs, run{op: op, parts: []string{tok}})
	}
}

func (w *opWriter) result() []WordOp {
	if len(w.runs) == 0 {
		return nil
	}
	out := make([]WordOp, len(w.runs))
	for i, r := range w.runs {
		out[i] = WordOp{Op: r.op, Text: strings.Join(r.parts, "")}
	}
	return out
}
