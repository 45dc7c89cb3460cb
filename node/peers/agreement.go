package peers

// Agreement statuses, as /check and the server answers spell them.
const (
	Unanimous      = "unanimous"
	Split          = "split"
	SingleObserver = "single-observer"
	Unobserved     = "unobserved"
)

// Agreement is what the kept observations of one server say together (see the package
// comment for the rules).
type Agreement struct {
	Status string `json:"status"`
	Counts Counts `json:"counts"`
}

// Counts are the figures an Agreement is decided from.
type Counts struct {
	// Observers is the observers with a kept observation of the server.
	Observers int `json:"observers"`
	// WithDigest is those whose kept observation carries a tool-set digest.
	WithDigest int `json:"withDigest"`
	// Digests is the distinct digests among them.
	Digests int `json:"digests"`
	// Agreeing is how many observers saw the digest most of them saw; with a split, the
	// others saw something else.
	Agreeing int `json:"agreeing"`
}

// agree decides the agreement over one server's kept observations. Every kept observation
// is open until its observer's next one replaces it, so all of them overlap in time and any
// two digests that differ are a split.
func agree(kept []summary) Agreement {
	by := map[string]int{}
	c := Counts{Observers: len(kept)}
	for _, k := range kept {
		if k.Digest == "" {
			continue
		}
		c.WithDigest++
		by[k.Digest]++
	}
	c.Digests = len(by)
	for _, n := range by {
		c.Agreeing = max(c.Agreeing, n)
	}
	a := Agreement{Counts: c}
	switch {
	case c.WithDigest == 0:
		a.Status = Unobserved
	case c.Digests > 1:
		a.Status = Split
	case c.WithDigest == 1:
		a.Status = SingleObserver
	default:
		a.Status = Unanimous
	}
	return a
}
