package federation

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
)

// membersFile is a members file's entries (Config.MembersFile).
type membersFile struct {
	peers []string // as Config.Peers, descriptor paths made absolute
	allow []string // as Config.AllowList
}

// readMembersFile reads a members file: one entry per line, "#" to the end of a line a
// comment, blank lines ignored. A relative descriptor path is read from the file's folder.
func readMembersFile(path string) (membersFile, error) {
	raw, err := readBounded(path, MaxMembersFileBytes)
	if err != nil {
		return membersFile{}, err
	}
	return parseMembersFile(raw, filepath.Dir(path))
}

func parseMembersFile(raw []byte, dir string) (membersFile, error) {
	var mf membersFile
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 4096), MaxMembersFileBytes)
	for line := 1; sc.Scan(); line++ {
		entry, _, _ := strings.Cut(sc.Text(), "#")
		entry = strings.TrimSpace(entry)
		switch {
		case entry == "":
		case strings.ContainsAny(entry, " \t"):
			return membersFile{}, fmt.Errorf("line %d: one entry per line, not %q", line, entry)
		case strings.HasPrefix(entry, "did:key:") && !strings.Contains(entry, "="):
			mf.allow = append(mf.allow, entry)
		case strings.HasPrefix(entry, "did:key:"):
			mf.peers = append(mf.peers, entry)
		default:
			if !filepath.IsAbs(entry) {
				entry = filepath.Join(dir, entry)
			}
			mf.peers = append(mf.peers, entry)
		}
	}
	if err := sc.Err(); err != nil {
		return membersFile{}, fmt.Errorf("reading the members file: %w", err)
	}
	return mf, nil
}
