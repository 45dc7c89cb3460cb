package diff

import (
	"sort"
)

// Change is what differs between two tool sets.
type Change struct {
	// Added and Removed are HISTOR's plain name sets, sorted: names only in
	// after, and only in before. A renamed tool is in both, and in Renamed.
	Added    []string
	Removed  []string
	Modified []ToolChange // tools on both sides whose members differ, by name
	Renamed  []Rename     // removed+added pairs with identical content, by From
	// SerializationOnly: the only differences are schema paths under
	// "$schema" or "additionalProperties" keywords.
	SerializationOnly bool
	// NamesOnly says one side had no digestible tool set, so only names
	// were compared (HISTOR's detail "names-only"); Modified, Renamed and
	// the addresses are then empty.
	NamesOnly bool
	// NewAddresses are the hosts, e-mail and IPv4 addresses after mentions
	// and before did not, sorted, at most MaxNewAddresses;
	// NewAddressesTotal counts them all.
	NewAddresses      []string
	NewAddressesTotal int
}

// Rename pairs a removed tool with an added one of identical description,
// inputSchema and outputSchema.
type Rename struct {
	From string
	To   string
}

// ToolChange lists the members that differ for one tool.
type ToolChange struct {
	Name   string
	Fields []FieldChange // in the order of Fields
}

// FieldChange is one member of a tool that differs: a text member carries
// Words, a JSON member Paths.
type FieldChange struct {
	Field     string
	Words     []WordOp
	Paths     []PathChange
	Truncated bool // Paths was cut at MaxPaths, MaxFieldBytes or MaxChangeBytes
}

// Members compared, in report order. description, inputSchema and
// outputSchema are what MTL/1 digests; title and annotations are not, but a
// reader of a change wants them too.
var (
	textFields = []string{"description", "title"}
	jsonFields = []string{"inputSchema", "outputSchema", "annotations"}
)

// Empty reports whether nothing changed.
func (c *Change) Empty() bool {
	return len(c.Added) == 0 && len(c.Removed) == 0 && len(c.Modified) == 0 && len(c.Renamed) == 0
}

// Compare diffs two tools arrays as a server sent them, parsed by log/canon.
// Elements that are not objects with a non-empty string name are ignored,
// and of two tools with one name the first is used: such sets have no
// digest, and a diff of them is only a courtesy. Compare never fails.
func Compare(before, after []any) *Change {
	a, b := index(before), index(after)
	c := &Change{}
	for name := range b {
		if _, ok := a[name]; !ok {
			c.Added = append(c.Added, name)
		}
	}
	for name := range a {
		if _, ok := b[name]; !ok {
			c.Removed = append(c.Removed, name)
		}
	}
	sort.Strings(c.Added)
	sort.Strings(c.Removed)
	c.pairRenames(a, b)
	serial := c.modified(a, b)
	c.SerializationOnly = serial && len(c.Modified) > 0 && len(c.Added) == 0 && len(c.Removed) == 0
	c.NewAddresses, c.NewAddressesTotal = newAddresses(a, b)
	return c
}

// CompareNames compares two tool sets by their names alone, as HISTOR
// does when either side has no digestible tool set (the names are the
// subject descriptors' toolSet.names): Added and Removed only.
func CompareNames(before, after []string) *Change {
	a, b := nameSet(before), nameSet(after)
	c := &Change{NamesOnly: true}
	for n := range b {
		if !a[n] {
			c.Added = append(c.Added, n)
		}
	}
	for n := range a {
		if !b[n] {
			c.Removed = append(c.Removed, n)
		}
	}
	sort.Strings(c.Added)
	sort.Strings(c.Removed)
	return c
}

func nameSet(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func index(tools []any) map[string]map[string]any {
	m := make(map[string]map[string]any, len(tools))
	for _, t := range tools {
		obj, ok := t.(map[string]any)
		if !ok {
			continue
		}
		name, ok := obj["name"].(string)
		if !ok || name == "" {
			continue
		}
		if _, dup := m[name]; !dup {
			m[name] = obj
		}
	}
	return m
}

// content is the normalised part of a tool that MTL/1 digests, apart from
// its name: equal content under two names is a rename.
func content(t map[string]any) string {
	return keyOf(text(t, "description"), schema(t, "inputSchema"), optional(t, "outputSchema"))
}

// pairRenames matches each added tool, in name order, with the first
// removed tool of identical content, so the pairing is deterministic.
// Added and Removed keep both names of a pair.
func (c *Change) pairRenames(a, b map[string]map[string]any) {
	if len(c.Added) == 0 || len(c.Removed) == 0 {
		return
	}
	byContent := map[string][]string{}
	for _, name := range c.Removed {
		k := content(a[name])
		byContent[k] = append(byContent[k], name)
	}
	for _, name := range c.Added {
		k := content(b[name])
		if from := byContent[k]; len(from) > 0 {
			c.Renamed = append(c.Renamed, Rename{From: from[0], To: name})
			byContent[k] = from[1:]
		}
	}
	sort.Slice(c.Renamed, func(i, j int) bool { return c.Renamed[i].From < c.Renamed[j].From })
}

// modified fills Modified and reports whether every change found was a
// serialization-only schema change.
func (c *Change) modified(a, b map[string]map[string]any) bool {
	names := make([]string, 0, len(a))
	for name := range a {
		if _, ok := b[name]; ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	serial := true
	room := MaxChangeBytes
	for _, name := range names {
		tc, s := compareTool(name, a[name], b[name], &room)
		if len(tc.Fields) > 0 {
			c.Modified = append(c.Modified, tc)
			serial = serial && s
		}
	}
	return serial
}

// compareTool diffs one tool's members; room is the bytes of path changes
// the rest of the Compare may still report, and is charged for them.
func compareTool(name string, a, b map[string]any, room *int) (ToolChange, bool) {
	tc := ToolChange{Name: name}
	serial := true
	for _, f := range textFields {
		if ta, tb := text(a, f), text(b, f); ta != tb {
			tc.Fields = append(tc.Fields, FieldChange{Field: f, Words: Words(ta, tb)})
			serial = false
		}
	}
	for _, f := range jsonFields {
		va, vb := jsonMember(a, f), jsonMember(b, f)
		if keyOf(va) == keyOf(vb) {
			continue
		}
		ps, s, trunc := paths(va, vb, *room)
		if len(ps) == 0 && !trunc {
			continue
		}
		for i := range ps {
			*room -= ps[i].size()
		}
		if ps == nil {
			ps = []PathChange{} // a path list cut before its first change
		}
		tc.Fields = append(tc.Fields, FieldChange{Field: f, Paths: ps, Truncated: trunc})
		serial = serial && s && f != "annotations"
	}
	return tc, serial
}

// text is a string member, "" unless a string (as MTL/1 reads description).
func text(t map[string]any, f string) string {
	s, _ := t[f].(string)
	return s
}

// schema is inputSchema as MTL/1 reads it: {} unless an object.
func schema(t map[string]any, f string) any {
	if m, ok := t[f].(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

// optional is an object member, or nil when it is absent or not an object.
func optional(t map[string]any, f string) any {
	if m, ok := t[f].(map[string]any); ok {
		return m
	}
	return nil
}

func jsonMember(t map[string]any, f string) any {
	if f == "inputSchema" {
		return schema(t, f)
	}
	return optional(t, f)
}
