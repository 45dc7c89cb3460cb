package trap

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/histor-observer/histor/sandbox"
)

func TestPlantDecoys(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	paths, classify, err := PlantDecoys(home, work, "abcd1234", os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(decoys) {
		t.Fatalf("%d paths, want %d", len(paths), len(decoys))
	}
	for _, p := range paths {
		host := filepath.Join(home, strings.TrimPrefix(p, HomeInSandbox+"/"))
		if rel, ok := strings.CutPrefix(p, WorkInSandbox+"/"); ok {
			host = filepath.Join(work, rel)
		}
		b, err := os.ReadFile(host)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(marker+"abcd1234-")) && !strings.HasPrefix(string(b), "[104,105,115,116,111,114,") {
			t.Errorf("%s carries no canary: %q", p, b)
		}
		if !classify(p).Decoy {
			t.Errorf("%s does not classify as a decoy", p)
		}
		if strings.HasSuffix(p, "solana/id.json") {
			continue // a byte array: recognisable by path, not by FindCanaries
		}
		uses := FindCanaries(b)
		if !slices.ContainsFunc(uses, func(u sandbox.PlaceholderUse) bool { return u.Name == p }) {
			t.Errorf("FindCanaries(%s) = %+v, want it named", p, uses)
		}
	}
	if _, _, err := PlantDecoys(home, work, "Bad-Tag", 0, 0); err == nil {
		t.Error("a bad tag planted decoys")
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		path           string
		decoy, persist bool
	}{
		{"/home/histor/.ssh/id_rsa", true, false},
		{"/home/histor/.ssh/authorized_keys", true, true},
		{"/home/histor/.npmrc", true, true},
		{"/home/histor/.bashrc", false, true},
		{"/home/histor/.config/systemd/user/x.service", false, true},
		{"/home/histor/../histor/.aws/credentials", true, false},
		{"/work/app/.env", true, false},
		{"/work/app/sub/.env", true, false},
		{"/work/app/index.js", false, false},
		{"/tmp/x", false, false},
		{"/etc/cron.d/x", false, true},
		{"/usr/lib/node_modules/x", false, true},
		{"relative/.ssh/id_rsa", false, false},
		{"/home/histor/notes/canary.txt", true, false},
		{"/home/histor/notes/other.txt", false, false},
	}
	for _, tt := range tests {
		if got := Classify(tt.path); got != (PathClass{tt.decoy, tt.persist}) {
			t.Errorf("Classify(%q) = %+v, want decoy %v persist %v", tt.path, got, tt.decoy, tt.persist)
		}
	}
}

func TestPlaceholders(t *testing.T) {
	ph, err := Placeholders([]string{"OPENAI_API_KEY", "db_url"}, "abcd1234")
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("Authorization: Bearer " + ph["OPENAI_API_KEY"] + "\n{\"u\":\"" + ph["db_url"] + "\"}")
	got := FindCanaries(data)
	if len(got) != 2 || got[0].Name != "OPENAI_API_KEY" || got[1].Name != "db_url" {
		t.Errorf("FindCanaries = %+v", got)
	}
	for _, bad := range [][]string{{"1X"}, {"A-B"}, {""}} {
		if _, err := Placeholders(bad, "abcd1234"); err == nil {
			t.Errorf("Placeholders(%q) accepted", bad)
		}
	}
	if _, err := Placeholders(nil, "abc"); err == nil {
		t.Error("a 3-character tag accepted")
	}
}

func TestFindCanaries(t *testing.T) {
	tests := []struct {
		data string
		want []string
	}{
		{"nothing here", nil},
		{marker, nil},
		{marker + "abcd", nil},
		{marker + "abcd1234-aws-and-more", []string{"/home/histor/.aws/credentials"}},
		{marker + "abcd1234-ssh-ed25519x", []string{"/home/histor/.ssh/id_ed25519"}},
		{marker + "abcd1234-env-TOKEN-x " + marker + "abcd1234-env-TOKEN", []string{"TOKEN"}},
		{"key=" + awsID + "HISTORCANARYABCD", []string{"/home/histor/.aws/credentials"}},
		{npmTok + "historcanaryabcd", []string{"/home/histor/.npmrc"}},
		{"xhistorcanaryabcd", nil},
		{marker + "abcd1234-nosuch", nil},
	}
	for _, tt := range tests {
		var names []string
		for _, u := range FindCanaries([]byte(tt.data)) {
			names = append(names, u.Name)
		}
		if !slices.Equal(names, tt.want) {
			t.Errorf("FindCanaries(%q) = %q, want %q", tt.data, names, tt.want)
		}
	}
	var many bytes.Buffer
	for i := range 100 {
		many.WriteString(marker + "abcd1234-env-V" + itoa(i) + " ")
	}
	if got := len(FindCanaries(many.Bytes())); got != maxUses {
		t.Errorf("%d uses, want the bound %d", got, maxUses)
	}
}

func FuzzFindCanaries(f *testing.F) {
	f.Add([]byte(marker + "abcd1234-env-X"))
	f.Add([]byte("gho_historcanary"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(FindCanaries(b)) > maxUses {
			t.Fatal("over the bound")
		}
	})
}
