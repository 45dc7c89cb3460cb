// Package feedtext holds the pieces of the node's Atom feeds that /feed.xml
// and /security-feed.xml share: the ?watch= parameter, the one-line account
// of a change and XML-safe text.
package feedtext

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/histor-observer/histor/internal/httpx"
)

// Bounds of the feeds.
const (
	MaxWatchIDs = 100 // ids one ?watch= may name
	ListNames   = 10  // names listed per kind in an entry's summary, HISTOR's
)

// WatchIDs reads ?watch=id,id,…: server ids (16 lowercase hex characters),
// at most MaxWatchIDs. nil when absent.
func WatchIDs(raw string) ([]string, error) {
	p := httpx.String{Name: "watch"}
	if err := httpx.ReadStrings(raw, &p); err != nil || !p.Present {
		return nil, err
	}
	ids := strings.Split(p.Value, ",")
	if len(ids) > MaxWatchIDs {
		return nil, &httpx.ParamError{Name: "watch", Why: fmt.Sprintf("names more than %d servers", MaxWatchIDs)}
	}
	for _, id := range ids {
		if !IsServerID(id) {
			return nil, &httpx.ParamError{Name: "watch", Why: "must be server ids (16 lowercase hex characters) separated by commas"}
		}
	}
	return ids, nil
}

// IsServerID reports whether s is a server id: 16 lowercase hex characters.
func IsServerID(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// summary is what an entry reads of a change summary.
type summary struct {
	Added        []string                `json:"added"`
	Removed      []string                `json:"removed"`
	Modified     []struct{ Tool string } `json:"modified"`
	NewAddresses []string                `json:"newAddresses"`
	NewTotal     *int                    `json:"newAddressesTotal"`
}

// SummaryLine is HISTOR's one-line account of a change.
func SummaryLine(raw json.RawMessage) string {
	var s summary
	if json.Unmarshal(raw, &s) != nil {
		return "definitions changed"
	}
	var parts []string
	if len(s.NewAddresses) > 0 {
		total := len(s.NewAddresses)
		if s.NewTotal != nil {
			total = *s.NewTotal
		}
		more := ""
		if total > ListNames {
			more = fmt.Sprintf(" (+%d more)", total-ListNames)
		}
		parts = append(parts, "NEW OUTSIDE ADDRESSES: "+strings.Join(head(s.NewAddresses), ", ")+more)
	}
	if len(s.Added) > 0 {
		parts = append(parts, "added: "+strings.Join(head(s.Added), ", "))
	}
	if len(s.Removed) > 0 {
		parts = append(parts, "removed: "+strings.Join(head(s.Removed), ", "))
	}
	if len(s.Modified) > 0 {
		tools := make([]string, 0, len(s.Modified))
		for _, m := range s.Modified {
			tools = append(tools, m.Tool)
		}
		parts = append(parts, "modified: "+strings.Join(head(tools), ", "))
	}
	if len(parts) == 0 {
		return "definitions changed"
	}
	return strings.Join(parts, "; ")
}

func head(s []string) []string { return s[:min(len(s), ListNames)] }

// XMLText escapes s for XML text or an attribute, dropping the characters
// XML 1.0 cannot carry at all (a tool name may hold them), as HISTOR does.
func XMLText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xD7FF ||
			r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF {
			return r
		}
		return -1
	}, s)
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
