package catalog

import (
	"bytes"
	"cmp"
	"index/suffixarray"
	"net/url"
	"slices"
	"strings"
)

// State is a /api/v1/servers filter.
type State int

// The filters, as HISTOR's store.search_targets defines them.
const (
	StateAll        State = iota
	StatePinned           // a tool-set digest on record
	StateChanged          // at least one change record
	StateFlagged          // block, advise or record matches on the current subject
	StateUnobserved       // no tool-set digest on record
	stateCount
)

var stateNames = [stateCount]string{"all", "pinned", "changed", "flagged", "unobserved"}

// ParseState reads a filter name; ok is false for an unknown one.
func ParseState(s string) (State, bool) {
	i := slices.Index(stateNames[:], s)
	return State(i), i >= 0
}

func (st State) String() string { return stateNames[st] }

func (st State) has(s *Server) bool {
	switch st {
	case StatePinned:
		return s.Pinned()
	case StateChanged:
		return s.ChangeCount > 0
	case StateFlagged:
		return s.Flagged()
	case StateUnobserved:
		return !s.Pinned()
	}
	return true
}

// MaxQueryRunes bounds a search text, HISTOR's max_length for q.
const MaxQueryRunes = 200

// Search returns the number of listed targets in state st that match q and
// the page [offset, offset+limit) of them, in HISTOR's order: pinned ones
// first, then most changes first, then name and endpoint. q matches a
// substring of the name, endpoint or title, case-insensitively; NUL
// characters and surrounding space are dropped from it first, as HISTOR
// drops them. Delisted targets are never listed (ByID still finds them).
func (c *Catalog) Search(q string, st State, limit, offset int) (total int, page []*Server) {
	snap := c.current()
	needle := []byte(strings.ToLower(strings.TrimSpace(strings.ReplaceAll(q, "\x00", ""))))
	if len(needle) == 0 {
		l := &snap.listed[st]
		return len(l.servers), window(l.servers, limit, offset)
	}
	all := &snap.listed[StateAll]
	if ks, ok := all.sparseHits(needle); ok {
		return all.pageOf(ks, st, limit, offset)
	}
	return snap.listed[st].scan(needle, limit, offset)
}

// maxSparseHits is the most occurrences of a search text that are looked
// up in the suffix array and sorted; beyond it one pass over the text costs
// less (about a millisecond at 20,000 servers).
const maxSparseHits = 4096

// list is one state's listed servers in list order, with their search
// text laid end to end (NUL-separated; a search text never holds NUL, so
// no match spans two servers) so a search is one pass over contiguous
// memory rather than a pointer chase per server.
type list struct {
	servers []*Server
	text    []byte
	starts  []int32 // starts[k] is where servers[k]'s text begins in text
	// index is a suffix array over text, kept for the all list only (4
	// bytes a byte of text): every other list is a subsequence of it.
	index *suffixarray.Index
}

// hay is what a search text is matched against: the lower-cased name,
// endpoint and title, NUL-separated.
func hay(s *Server) string {
	return strings.ToLower(s.Name + "\x00" + s.Endpoint + "\x00" + s.Title)
}

// newList lays out the servers' hays (hays[s], computed once per index).
func newList(servers []*Server, hays map[*Server]string) list {
	l := list{servers: servers, starts: make([]int32, len(servers))}
	var b bytes.Buffer
	for k, s := range servers {
		l.starts[k] = int32(b.Len())
		b.WriteString(hays[s])
		b.WriteByte(0)
	}
	l.text = b.Bytes()
	return l
}

// scan is a search by one pass of the list's text: each hit is mapped to
// its server by a cursor that only moves forward (hits come in order), and
// the scan resumes at the next server's text, so a server counts once.
func (l *list) scan(needle []byte, limit, offset int) (total int, page []*Server) {
	k := 0
	for pos := 0; pos < len(l.text); {
		i := bytes.Index(l.text[pos:], needle)
		if i < 0 {
			break
		}
		for k+1 < len(l.starts) && int(l.starts[k+1]) <= pos+i {
			k++
		}
		if total >= offset && len(page) < limit {
			page = append(page, l.servers[k])
		}
		total++
		if k+1 == len(l.starts) {
			break
		}
		k++
		pos = int(l.starts[k])
	}
	return total, page
}

// sparseHits returns the servers whose text holds needle, as ascending
// indexes into l.servers, each once; ok is false when l has no index or
// needle occurs more than maxSparseHits times.
func (l *list) sparseHits(needle []byte) (ks []int, ok bool) {
	if l.index == nil {
		return nil, false
	}
	at := l.index.Lookup(needle, maxSparseHits+1)
	if len(at) > maxSparseHits {
		return nil, false
	}
	slices.Sort(at)
	for _, a := range at {
		k, exact := slices.BinarySearch(l.starts, int32(a))
		if !exact {
			k-- // a lies inside servers[k-1]'s text
		}
		if len(ks) == 0 || ks[len(ks)-1] != k {
			ks = append(ks, k)
		}
	}
	return ks, true
}

// pageOf counts the servers ks of l that are in state st and returns the
// page of them; the state lists keep l's order, so this is their order.
func (l *list) pageOf(ks []int, st State, limit, offset int) (total int, page []*Server) {
	for _, k := range ks {
		s := l.servers[k]
		if !st.has(s) {
			continue
		}
		if total >= offset && len(page) < limit {
			page = append(page, s)
		}
		total++
	}
	return total, page
}

func window(all []*Server, limit, offset int) []*Server {
	if offset >= len(all) || limit <= 0 {
		return nil
	}
	return all[offset:min(len(all), offset+limit)]
}

// index builds the lookups, the state lists and the counts from s.servers.
func (s *snapshot) index() {
	servers := s.servers
	listed := make([]*Server, 0, len(servers))
	hays := make(map[*Server]string, len(servers))
	for _, sv := range servers {
		if !sv.Delisted {
			listed = append(listed, sv)
			hays[sv] = hay(sv)
		}
	}
	slices.SortFunc(listed, listOrder)
	for st := range stateCount {
		var in []*Server
		for _, sv := range listed {
			if st.has(sv) {
				in = append(in, sv)
			}
		}
		s.listed[st] = newList(in, hays)
	}
	all := &s.listed[StateAll]
	all.index = suffixarray.New(all.text)
	s.byEndpoint, s.byName = map[string][]*Server{}, map[string][]*Server{}
	for _, sv := range servers {
		s.byEndpoint[NormalizeEndpoint(sv.Endpoint)] = append(s.byEndpoint[NormalizeEndpoint(sv.Endpoint)], sv)
		s.byName[sv.Name] = append(s.byName[sv.Name], sv)
	}
	for _, l := range s.byEndpoint {
		slices.SortFunc(l, func(a, b *Server) int { return lookupOrder(a, b, a.Name, b.Name) })
	}
	for _, l := range s.byName {
		slices.SortFunc(l, func(a, b *Server) int { return lookupOrder(a, b, a.Endpoint, b.Endpoint) })
	}
	s.counts = countTargets(listed)
	s.hosts, s.distinct = countHosts(servers)
}

// listOrder is HISTOR's: ORDER BY current_toolset IS NULL, changes DESC, name, endpoint.
func listOrder(a, b *Server) int {
	if a.Pinned() != b.Pinned() {
		if a.Pinned() {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(b.ChangeCount, a.ChangeCount), strings.Compare(a.Name, b.Name),
		strings.Compare(a.Endpoint, b.Endpoint))
}

// lookupOrder is HISTOR's targets_by order: ORDER BY delisted, then key.
func lookupOrder(a, b *Server, ka, kb string) int {
	if a.Delisted != b.Delisted {
		if b.Delisted {
			return -1
		}
		return 1
	}
	return strings.Compare(ka, kb)
}

// Counts are HISTOR's target_counts, over the listed targets.
type Counts struct {
	Listed       int `json:"listed"`
	Pinned       int `json:"pinned"`
	EverChanged  int `json:"ever_changed"`
	BlockTier    int `json:"block_tier"`
	AdviseOnly   int `json:"advise_only"`
	NameRecords  int `json:"name_records"`
	NotAttempted int `json:"not_attempted"`
	Servers      int `json:"servers"` // distinct registry names
}

func countTargets(listed []*Server) Counts {
	var n Counts
	names := map[string]bool{}
	for _, s := range listed {
		n.Listed++
		names[s.Name] = true
		n.Pinned += b2i(s.Pinned())
		n.EverChanged += b2i(s.ChangeCount > 0)
		n.BlockTier += b2i(s.Obs.BlockMatches > 0)
		n.AdviseOnly += b2i(s.Obs.BlockMatches == 0 && s.Obs.AdviseMatches > 0)
		n.NameRecords += b2i(s.Obs.RecordMatches > 0)
		n.NotAttempted += b2i(s.Skip != "")
	}
	n.Servers = len(names)
	return n
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Counts returns the target counts of the current snapshot.
func (c *Catalog) Counts() Counts { return c.current().counts }

// HostCount is one row of /api/v1/stats/hosts.
type HostCount struct {
	Host      string `json:"host"`
	Endpoints int    `json:"endpoints"`
}

// maxHosts is how many hosts are kept, HISTOR's most_common(50).
const maxHosts = 50

// countHosts counts endpoints per host among the listed targets that are
// dialled (not skipped), most first; ties keep name-then-endpoint order, as
// Python's Counter.most_common keeps first-seen order.
func countHosts(servers []*Server) ([]HostCount, int) {
	sorted := slices.Clone(servers)
	slices.SortFunc(sorted, func(a, b *Server) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Endpoint, b.Endpoint))
	})
	idx := map[string]int{}
	var out []HostCount
	for _, s := range sorted {
		if s.Delisted || s.Skip != "" {
			continue
		}
		h := hostOf(s.Endpoint)
		i, ok := idx[h]
		if !ok {
			i = len(out)
			idx[h] = i
			out = append(out, HostCount{Host: h})
		}
		out[i].Endpoints++
	}
	slices.SortStableFunc(out, func(a, b HostCount) int { return cmp.Compare(b.Endpoints, a.Endpoints) })
	return out[:min(len(out), maxHosts)], len(out)
}

func hostOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Hostname() == "" {
		return "?"
	}
	return strings.ToLower(u.Hostname())
}

// Hosts returns up to limit hosts (at most 50) by endpoint count, and how
// many distinct hosts there are.
func (c *Catalog) Hosts(limit int) ([]HostCount, int) {
	s := c.current()
	return s.hosts[:min(len(s.hosts), max(limit, 0))], s.distinct
}
