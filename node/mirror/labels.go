package mirror

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/mtl"
)

// Observation is one observer's observation of one server, read out of a
// tool-set-observation label in its log: the label latest in log order for that server is the
// observer's current word on it. Digest is the label's tool-set digest; a label without one
// (a tool list MTL/1 could not digest) has Status StatusNoDigest.
type Observation struct {
	Observer   string    `json:"observer"`
	Server     string    `json:"server"` // mtl.ServerID(name, endpoint)
	Endpoint   string    `json:"endpoint,omitempty"`
	Package    string    `json:"package,omitempty"` // npm:<name>@<version> or pypi:<name>==<version>
	Digest     string    `json:"digest,omitempty"`
	Status     string    `json:"status,omitempty"`
	ObservedAt time.Time `json:"observedAt"`
	LabelID    string    `json:"labelId"`
	LeafIndex  uint64    `json:"leafIndex"`
}

// StatusNoDigest is the status of an observation whose label carries no tool-set digest.
const StatusNoDigest = "no-digest"

// observationLabel is what the index reads of a label: the members every MTL/1 label
// restates.
type observationLabel struct {
	ID     string          `json:"id"`
	Issuer json.RawMessage `json:"issuer"`
	CS     struct {
		VerifiedWork struct {
			DigestSRI string `json:"digestSRI"`
		} `json:"verifiedWork"`
		Method struct {
			ID string `json:"id"`
		} `json:"method"`
		MTL struct {
			ObservedAt string `json:"observedAt"`
			Server     struct {
				Name string `json:"name"`
			} `json:"server"`
			ToolSet struct {
				DigestSRI string `json:"digestSRI"`
			} `json:"toolSet"`
		} `json:"mcpTrustLabel"`
	} `json:"credentialSubject"`
}

// labelObs is an observation label's facts before its subject descriptor is read.
type labelObs struct {
	Observation
	Subject string `json:"subject"` // the subject descriptor's SRI
	Name    string `json:"name"`    // the label's server name
}

var methodMarker = []byte(awr.MethodObservation)

// readLabel reads an observation label out of a log entry; nil (and no error) for an entry
// that is another kind of label. The entry is the observer's, by its signed checkpoint; a
// label issued by another did, or one that lacks what an observation label must say, is an
// error the caller records and skips.
func readLabel(did string, leaf uint64, entry []byte) (*labelObs, error) {
	if !bytes.Contains(entry, methodMarker) {
		return nil, nil
	}
	var l observationLabel
	if err := json.Unmarshal(entry, &l); err != nil {
		return nil, fmt.Errorf("entry %d: %w", leaf, err)
	}
	if l.CS.Method.ID != awr.MethodObservation {
		return nil, nil
	}
	if iss := issuerID(l.Issuer); iss != did {
		return nil, fmt.Errorf("entry %d: label issued by %q", leaf, iss)
	}
	at, err := time.Parse(time.RFC3339, l.CS.MTL.ObservedAt)
	if err != nil {
		return nil, fmt.Errorf("entry %d: observedAt: %w", leaf, err)
	}
	if l.ID == "" || l.CS.MTL.Server.Name == "" || !mtl.ValidSRI(l.CS.VerifiedWork.DigestSRI) {
		return nil, fmt.Errorf("entry %d: observation label without id, server name or subject", leaf)
	}
	o := &labelObs{Subject: l.CS.VerifiedWork.DigestSRI, Name: l.CS.MTL.Server.Name}
	o.Observer, o.LabelID, o.LeafIndex, o.ObservedAt = did, l.ID, leaf, at.UTC()
	if o.Digest = l.CS.MTL.ToolSet.DigestSRI; o.Digest == "" {
		o.Status = StatusNoDigest
	}
	return o, nil
}

func issuerID(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		ID string `json:"id"`
	}
	json.Unmarshal(raw, &o)
	return o.ID
}

// withDescriptor completes o from its subject descriptor: the server id is the label's
// server name with the descriptor's endpoint (for a package, its registry key).
func (o *labelObs) withDescriptor(desc []byte) (Observation, error) {
	v, err := canon.Parse(desc)
	if err != nil {
		return Observation{}, fmt.Errorf("descriptor %s: %w", o.Subject, err)
	}
	d, _ := v.(map[string]any)
	srv, _ := d["server"].(map[string]any)
	art, _ := d["artifact"].(map[string]any)
	ts, _ := d["toolSet"].(map[string]any)
	name, _ := srv["name"].(string)
	digest, _ := ts["digestSRI"].(string)
	endpoint, _ := art["endpoint"].(string)
	pkg, _ := art["package"].(string)
	switch {
	case name != o.Name:
		return Observation{}, fmt.Errorf("descriptor %s names server %q, the label %q", o.Subject, name, o.Name)
	case digest != o.Digest:
		return Observation{}, fmt.Errorf("descriptor %s has tool-set digest %q, the label %q", o.Subject, digest, o.Digest)
	}
	out := o.Observation
	key := endpoint
	if key == "" && pkg != "" {
		key = packageKey(pkg)
		out.Package = pkg
	} else {
		out.Endpoint = endpoint
	}
	if key == "" {
		return Observation{}, errors.New("descriptor " + o.Subject + " names no endpoint or package")
	}
	out.Server = mtl.ServerID(name, key)
	return out, nil
}

// packageKey is a package artifact's registry key (the target's endpoint): npm:<name> of
// npm:<name>@<version>, pypi:<name> of pypi:<name>==<version>.
func packageKey(pkg string) string {
	switch {
	case strings.HasPrefix(pkg, "npm:"):
		if i := strings.LastIndexByte(pkg, '@'); i > len("npm:") {
			return pkg[:i]
		}
	case strings.HasPrefix(pkg, "pypi:"):
		if k, _, ok := strings.Cut(pkg, "=="); ok {
			return k
		}
	}
	return ""
}
