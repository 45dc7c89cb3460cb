package trap

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/histor-observer/histor/sandbox"
)

// Every canary value carries marker + tag + "-" + label, where the label
// names the decoy file or ("env-" + NAME) the environment variable it was
// planted as, so a value seen anywhere says where it came from. Key-shaped
// values that cannot hold hyphens carry compactMarker + tag instead, after
// a prefix that names their file.
const (
	marker        = "histor-" + "canary-"
	compactMarker = "historcanary"
	envLabel      = "env-"
	maxUses       = 40
)

var tagPattern = regexp.MustCompile(`^[a-z0-9]{4,32}$`)

// ErrBadTag says a run tag is not 4 to 32 of [a-z0-9].
var ErrBadTag = fmt.Errorf("run tag: want 4 to 32 of [a-z0-9]")

func checkTag(tag string) error {
	if !tagPattern.MatchString(tag) {
		return fmt.Errorf("%w, got %q", ErrBadTag, tag)
	}
	return nil
}

func token(tag, label string) string { return marker + tag + "-" + label }

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// Placeholders gives every declared environment variable a value that is
// recognisably a placeholder and names the variable, so a value seen
// leaving says which variable the package read.
func Placeholders(names []string, tag string) (map[string]string, error) {
	if err := checkTag(tag); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(names))
	for _, name := range names {
		if !envName.MatchString(name) {
			return nil, fmt.Errorf("placeholder for %q: not an environment variable name", name)
		}
		out[name] = token(tag, envLabel+name)
	}
	return out, nil
}

// compactPrefixes name the decoy a compact canary belongs to by the four
// bytes before it (lower-cased).
var compactPrefixes = map[string]string{
	"npm_": "npmrc",
	"gho_": "gh",
	"akia": "aws",
}

// FindCanaries returns the decoys (by path inside the sandbox) and
// placeholders (by variable name) whose values appear in data, distinct, in
// order of first appearance, at most 40. Where is left for the caller.
func FindCanaries(data []byte) []sandbox.PlaceholderUse {
	var uses []sandbox.PlaceholderUse
	seen := map[string]bool{}
	add := func(name string) {
		if name != "" && !seen[name] && len(uses) < maxUses {
			seen[name] = true
			uses = append(uses, sandbox.PlaceholderUse{Name: name})
		}
	}
	for rest := data; ; {
		i := bytes.Index(rest, []byte(marker))
		if i < 0 {
			break
		}
		rest = rest[i+len(marker):]
		add(nameOfToken(rest))
	}
	lower := bytes.ToLower(data)
	for rest, at := lower, 0; ; {
		i := bytes.Index(rest, []byte(compactMarker))
		if i < 0 {
			break
		}
		if pos := at + i; pos >= 4 {
			if label, ok := compactPrefixes[string(lower[pos-4:pos])]; ok {
				add(decoyName(label))
			}
		}
		rest, at = rest[i+len(compactMarker):], at+i+len(compactMarker)
	}
	return uses
}

// nameOfToken reads "<tag>-<label>" after a marker and names its source.
func nameOfToken(b []byte) string {
	tagEnd := 0
	for tagEnd < len(b) && tagEnd < 32 && isTagByte(b[tagEnd]) {
		tagEnd++
	}
	if tagEnd < 4 || tagEnd >= len(b) || b[tagEnd] != '-' {
		return ""
	}
	label := b[tagEnd+1:]
	end := 0
	for end < len(label) && end < 160 && isLabelByte(label[end]) {
		end++
	}
	l := string(label[:end])
	if v, ok := strings.CutPrefix(l, envLabel); ok {
		for j, c := range []byte(v) {
			if !(c == '_' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
				v = v[:j]
				break
			}
		}
		return v
	}
	best := ""
	for _, d := range decoys {
		if strings.HasPrefix(l, d.label) && len(d.label) > len(best) {
			best = d.label
		}
	}
	return decoyName(best)
}

func isTagByte(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' }

func isLabelByte(c byte) bool {
	return isTagByte(c) || c >= 'A' && c <= 'Z' || c == '_' || c == '-'
}
