package trap

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Where the run mounts HOME and the working directory: decoy paths and the
// classifier speak in these.
const (
	HomeInSandbox = "/home/histor"
	WorkInSandbox = "/work/app"
)

// decoy is one planted file. label is its canary label; rel is relative to
// HOME, or to the working directory when inWork.
type decoy struct {
	label  string
	rel    string
	inWork bool
	secret bool // mode 0600 rather than 0644
	body   func(tag string) string
}

// Key-shaped prefixes, assembled so no literal key shape sits in the source.
var (
	pemBegin = "-----BEGIN OPENSSH " + "PRIVATE KEY-----"
	pemEnd   = "-----END OPENSSH " + "PRIVATE KEY-----"
	awsID    = "AK" + "IA"
	npmTok   = "npm" + "_"
	ghTok    = "gh" + "o_"
)

// HISTOR's decoy set: HOME that looks worth stealing from, and a .env.
var decoys = []decoy{
	{"ssh-rsa", ".ssh/id_rsa", false, true, func(t string) string {
		return pemBegin + "\n" + token(t, "ssh-rsa") + "\n" + pemEnd + "\n"
	}},
	{"ssh-ed25519", ".ssh/id_ed25519", false, true, func(t string) string {
		return pemBegin + "\n" + token(t, "ssh-ed25519") + "\n" + pemEnd + "\n"
	}},
	{"aws", ".aws/credentials", false, true, func(t string) string {
		return "[default]\naws_access_key_id = " + awsID + strings.ToUpper(compactMarker+t[:4]) +
			"\naws_secret_access_key = " + token(t, "aws") + "\n"
	}},
	{"npmrc", ".npmrc", false, true, func(t string) string {
		return "//registry.npmjs.org/:_authToken=" + npmTok + fill(compactMarker+t, 36) +
			"\n//npm.pkg.github.com/:_authToken=" + token(t, "npmrc") + "\n"
	}},
	{"pypirc", ".pypirc", false, true, func(t string) string {
		return "[pypi]\nusername = __token__\npassword = " + token(t, "pypirc") + "\n"
	}},
	{"netrc", ".netrc", false, true, func(t string) string {
		return "machine github.com login histor password " + token(t, "netrc") + "\n"
	}},
	{"gh", ".config/gh/hosts.yml", false, true, func(t string) string {
		return "github.com:\n    user: " + token(t, "gh") + "\n    oauth_token: " + ghTok + fill(compactMarker+t, 36) +
			"\n    git_protocol: https\n"
	}},
	{"docker", ".docker/config.json", false, true, func(t string) string {
		auth := base64.StdEncoding.EncodeToString([]byte("histor:" + token(t, "docker")))
		b, _ := json.Marshal(map[string]any{"auths": map[string]any{
			"https://index.docker.io/v1/": map[string]string{"auth": auth, "identitytoken": token(t, "docker")}}})
		return string(b) + "\n"
	}},
	{"kube", ".kube/config", false, true, func(t string) string {
		return "apiVersion: v1\nkind: Config\nusers:\n- name: histor\n  user:\n    token: " + token(t, "kube") + "\n"
	}},
	{"solana", ".config/solana/id.json", false, true, func(t string) string {
		key := []byte(fill(token(t, "solana"), 64))
		b, _ := json.Marshal(bytesAsInts(key))
		return string(b) + "\n"
	}},
	{"bash-history", ".bash_history", false, false, func(t string) string {
		return "export OPENAI_API_KEY=" + token(t, "bash-history") + "\ngit push\n"
	}},
	{"zsh-history", ".zsh_history", false, false, func(t string) string {
		return ": 1700000000:0;export STRIPE_SECRET_KEY=" + token(t, "zsh-history") + "\n"
	}},
	{"notes", "notes/canary.txt", false, false, func(t string) string {
		return "vault passphrase: " + token(t, "notes") + "\n"
	}},
	{"dotenv", ".env", true, true, func(t string) string {
		return "OPENAI_API_KEY=" + token(t, "dotenv") +
			"\nDATABASE_URL=postgres://histor:" + token(t, "dotenv") + "@db.histor-trap.invalid/app\n"
	}},
}

// fill repeats s to exactly n bytes.
func fill(s string, n int) string { return strings.Repeat(s, n/len(s)+1)[:n] }

func bytesAsInts(b []byte) []int {
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

// inSandbox is where d is seen from inside the sandbox.
func (d decoy) inSandbox() string {
	if d.inWork {
		return path.Join(WorkInSandbox, d.rel)
	}
	return path.Join(HomeInSandbox, d.rel)
}

// decoyName names a decoy label by its path inside the sandbox.
func decoyName(label string) string {
	for _, d := range decoys {
		if d.label == label {
			return d.inSandbox()
		}
	}
	return ""
}

// PlantDecoys writes the decoy set into home (mounted at HomeInSandbox) and
// a .env into workdir (mounted at WorkInSandbox), every value carrying
// tag, owned by uid:gid (the sandbox's user) so the package can read them.
// home itself is handed to uid:gid too. It returns the decoy paths as seen
// inside the sandbox and the classifier for the trace parser.
func PlantDecoys(home, workdir, tag string, uid, gid int) ([]string, Classifier, error) {
	if err := checkTag(tag); err != nil {
		return nil, nil, err
	}
	if err := os.Chown(home, uid, gid); err != nil {
		return nil, nil, fmt.Errorf("planting decoys: %w", err)
	}
	var paths []string
	for _, d := range decoys {
		root := home
		if d.inWork {
			root = workdir
		}
		if err := plant(root, d, tag, uid, gid); err != nil {
			return nil, nil, fmt.Errorf("planting decoy %s: %w", d.rel, err)
		}
		paths = append(paths, d.inSandbox())
	}
	return paths, Classify, nil
}

func plant(root string, d decoy, tag string, uid, gid int) error {
	dir := root
	for _, part := range strings.Split(path.Dir(d.rel), "/") {
		if part == "." {
			break
		}
		dir = filepath.Join(dir, part)
		mode := os.FileMode(0o755)
		if part == ".ssh" {
			mode = 0o700
		}
		if err := os.Mkdir(dir, mode); err != nil && !os.IsExist(err) {
			return err
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return err
		}
	}
	file := filepath.Join(root, filepath.FromSlash(d.rel))
	mode := os.FileMode(0o644)
	if d.secret {
		mode = 0o600
	}
	if err := os.WriteFile(file, []byte(d.body(tag)), mode); err != nil {
		return err
	}
	if err := os.Chmod(file, mode); err != nil {
		return err
	}
	return os.Chown(file, uid, gid)
}

// PathClass says what touching a path (inside the sandbox) means.
type PathClass struct {
	Decoy   bool // opening it is reaching for credentials
	Persist bool // writing it would outlive the sandbox on a real machine
}

// Classifier classifies an absolute path inside the sandbox.
type Classifier func(path string) PathClass

// decoyPrefixes are paths under HOME whose opening is reaching for
// credentials; a trailing slash means the whole directory.
var decoyPrefixes = []string{".ssh/", ".aws/", ".npmrc", ".pypirc", ".netrc", ".config/gh/", ".docker/config.json",
	".kube/", ".config/solana/", ".bash_history", ".zsh_history", ".gnupg/", ".env", "notes/canary.txt"}

// persistPrefixes are paths under HOME whose writing would persist.
var persistPrefixes = []string{".bashrc", ".bash_profile", ".profile", ".zshrc", ".zprofile", ".ssh/authorized_keys",
	".config/autostart/", "Library/LaunchAgents/", ".config/systemd/user/", ".npmrc", ".gitconfig"}

// scratch are the roots a write may touch without persisting.
var scratch = []string{"/tmp", HomeInSandbox, "/work", "/dev", "/proc"}

// Classify is the classifier for the layout PlantDecoys makes. Relative
// paths classify as nothing: the caller resolves them first.
func Classify(p string) PathClass {
	if !path.IsAbs(p) {
		return PathClass{}
	}
	p = path.Clean(p)
	var c PathClass
	if rel, ok := under(p, HomeInSandbox); ok {
		c.Decoy = matches(rel, decoyPrefixes)
		c.Persist = matches(rel, persistPrefixes)
	}
	if path.Base(p) == ".env" {
		if _, ok := under(p, WorkInSandbox); ok {
			c.Decoy = true
		}
	}
	outside := true
	for _, root := range scratch {
		if _, ok := under(p, root); ok || p == root {
			outside = false
		}
	}
	c.Persist = c.Persist || outside
	return c
}

func under(p, root string) (string, bool) {
	return strings.CutPrefix(p, root+"/")
}

func matches(rel string, prefixes []string) bool {
	for _, pre := range prefixes {
		if strings.HasSuffix(pre, "/") {
			if strings.HasPrefix(rel, pre) || rel+"/" == pre {
				return true
			}
		} else if rel == pre {
			return true
		}
	}
	return false
}
