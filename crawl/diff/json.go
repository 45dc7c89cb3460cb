package diff

import (
	"bytes"
	"fmt"

	"github.com/histor-observer/histor/log/canon"
)

// MarshalJSON writes the summary of a HISTOR change record (a value
// receiver, so a Change marshals the same whether or not it is a pointer):
//
//	{"added":[…],"removed":[…],"modified":[{"tool":…,"fields":{…}}],
//	 "detail":"full","newAddresses":[…],"newAddressesTotal":N,
//	 "renamed":[{"from":…,"to":…}],"serializationOnly":…}
//
// Lists are never null. As HISTOR's, a names-only summary ("detail":
// "names-only") has no newAddresses or newAddressesTotal; renamed and
// serializationOnly are ours.
func (c Change) MarshalJSON() ([]byte, error) {
	renamed := make([]map[string]string, len(c.Renamed))
	for i, r := range c.Renamed {
		renamed[i] = map[string]string{"from": r.From, "to": r.To}
	}
	addrs := nonNil(c.NewAddresses)
	detail, addrsp, total := "full", &addrs, &c.NewAddressesTotal
	if c.NamesOnly {
		detail, addrsp, total = "names-only", nil, nil
	}
	return marshal(struct {
		Added             []string            `json:"added"`
		Removed           []string            `json:"removed"`
		Modified          []ToolChange        `json:"modified"`
		Detail            string              `json:"detail"`
		NewAddresses      *[]string           `json:"newAddresses,omitempty"`
		NewAddressesTotal *int                `json:"newAddressesTotal,omitempty"`
		Renamed           []map[string]string `json:"renamed"`
		SerializationOnly bool                `json:"serializationOnly"`
	}{nonNil(c.Added), nonNil(c.Removed), nonNil(c.Modified), detail, addrsp, total, renamed, c.SerializationOnly})
}

// MarshalJSON writes {"tool":name,"fields":{field: ops or paths, …}} with
// the fields in Compare's order. A truncated path list ends with HISTOR's
// marker entry {"path":"…","note":"truncated at N paths"}, N being the
// number of paths listed.
func (t ToolChange) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	name, err := marshal(t.Name)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(&buf, `{"tool":%s,"fields":{`, name)
	for i, f := range t.Fields {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := writeField(&buf, f); err != nil {
			return nil, err
		}
	}
	buf.WriteString("}}")
	return buf.Bytes(), nil
}

func writeField(buf *bytes.Buffer, f FieldChange) error {
	k, err := marshal(f.Field)
	if err != nil {
		return err
	}
	var v []byte
	if f.Paths != nil {
		list := make([]any, 0, len(f.Paths)+1)
		for _, p := range f.Paths {
			list = append(list, p)
		}
		if f.Truncated {
			list = append(list, struct {
				Path string `json:"path"`
				Note string `json:"note"`
			}{"…", fmt.Sprintf("truncated at %d paths", len(f.Paths))})
		}
		v, err = marshal(list)
	} else {
		v, err = marshal(nonNil(f.Words))
	}
	if err != nil {
		return fmt.Errorf("encoding field %s: %w", f.Field, err)
	}
	buf.Write(k)
	buf.WriteByte(':')
	buf.Write(v)
	return nil
}

// MarshalJSON writes [op, text], as HISTOR's word diffs are written.
func (w WordOp) MarshalJSON() ([]byte, error) {
	return marshal([2]string{string(w.Op), w.Text})
}

// MarshalJSON writes {"path","op","old"?,"new"?}; old and new hold the
// values' JSON text, as HISTOR's schema diffs do.
func (p PathChange) MarshalJSON() ([]byte, error) {
	type out struct {
		Path string  `json:"path"`
		Op   string  `json:"op"`
		Old  *string `json:"old,omitempty"`
		New  *string `json:"new,omitempty"`
	}
	o := out{Path: p.Path, Op: string(p.Kind)}
	if p.Kind != Added {
		o.Old = &p.Before
	}
	if p.Kind != Removed {
		o.New = &p.After
	}
	return marshal(o)
}

// marshal is json.Marshal without HTML escaping: descriptions quoted in a
// change record should read as the server wrote them. (json.Marshal of a
// Change escapes <, > and & again around these methods; an Encoder with
// SetEscapeHTML(false) keeps them.)
func marshal(v any) ([]byte, error) { return canon.MarshalPlain(v) }

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
