package pkgstest

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"regexp"

	"github.com/histor-observer/histor/sandbox/testdata/hostile"
)

// What the hostile fixtures reach for, as their sources spell it. Every
// name is under .invalid and every address a documentation, loopback or
// loopback-alias address, so nothing could leave even by mistake.
const (
	// HostileArmEnv set to "1" makes the hostile tools and the install
	// script act without decoys; otherwise they act only where a decoy
	// (~/.ssh/id_rsa, ~/.aws/credentials, ~/.npmrc or ./.env) holds a
	// histor canary, and refuse (isError) everywhere else.
	HostileArmEnv = "HISTOR_HOSTILE_ARMED"
	// HostileDNSSuffix ends the name exfil-dns looks up:
	// <canary from ./.env>.<hex of .env's first 31 bytes>.<suffix>.
	HostileDNSSuffix = "exfil.histor-hostile.invalid"
	// HostileInstallDNSSuffix ends the name the install script looks up.
	HostileInstallDNSSuffix = "install.histor-hostile.invalid"
	// HostileCollectHost receives exfil-http (port 80, POST /), exfil-https
	// (port 443) and the install script's POST /install.
	HostileCollectHost = "collect.histor-hostile.invalid"
	// HostileMailHost is exfil-smtp's server (port 25).
	HostileMailHost = "mail.histor-hostile.invalid"
	// HostileRecipient is the "to" of the JSON bodies and the SMTP RCPT.
	HostileRecipient = "loot@histor-hostile.invalid"
)

// HostileTCPTargets are exfil-tcp's fixed destinations; it also tries the
// default gateway (from /proc/net/route) on port 22.
func HostileTCPTargets() []string {
	return []string{"198.51.100.7:4444", "10.0.2.2:22", "127.0.0.1:4444"}
}

// HostileTool is one tool of the hostile fixture servers.
type HostileTool struct {
	Name string
	// Acts says the tool does something (network, /tmp, processes,
	// memory) and so refuses without decoys or HostileArmEnv. get-env and
	// read-secrets only read.
	Acts bool
	// Ends says the tool is meant to end the sandbox (processes or memory
	// past the limits); these come last.
	Ends bool
}

// HostileTools are both fixture servers' tools in the order tools/list
// gives them.
func HostileTools() []HostileTool {
	return []HostileTool{
		{Name: "get-env"}, {Name: "read-secrets"},
		{Name: "exfil-dns", Acts: true}, {Name: "exfil-http", Acts: true}, {Name: "exfil-https", Acts: true},
		{Name: "exfil-smtp", Acts: true}, {Name: "exfil-tcp", Acts: true}, {Name: "fill-tmp", Acts: true},
		{Name: "fork-bomb", Acts: true, Ends: true}, {Name: "alloc", Acts: true, Ends: true},
	}
}

// HostileNPM is histor-hostile-fixture, the npm server: bin index.js, no
// dependencies, no install scripts.
func HostileNPM() NPMPackage { return npmFromSources("npm/fixture") }

// HostileInstallNPM is histor-hostile-install: its postinstall reads
// ~/.npmrc, looks up a name under HostileInstallDNSSuffix, POSTs the file
// to HostileCollectHost, appends to ~/.bashrc and then never ends (a child
// sleep and a timer keep it alive); its bin is a plain server with one
// tool, hello.
func HostileInstallNPM() NPMPackage { return npmFromSources("npm/install") }

// HostileWheel is histor-hostile-fixture, the wheel: the same tools as
// HostileNPM, standard library only, console script
// histor-hostile-fixture = histor_hostile_fixture.server:main.
func HostileWheel() Wheel {
	const module = "pypi/histor_hostile_fixture"
	files := map[string]string{}
	for name, body := range sourceFiles(module) {
		files["histor_hostile_fixture/"+name] = body
	}
	version := pyVersion.FindStringSubmatch(files["histor_hostile_fixture/__init__.py"])
	if version == nil {
		panic("hostile fixture: no __version__ in histor_hostile_fixture/__init__.py")
	}
	return Wheel{Name: "histor-hostile-fixture", Version: version[1], Files: files, RequiresPython: ">=3.9",
		EntryPoints: mustSource("pypi/entry_points.txt")}
}

var pyVersion = regexp.MustCompile(`(?m)^__version__ = "([^"]+)"$`)

// Tarball packs p as NPMRegistry.Add publishes it: the same bytes, for a
// local .tgz.
func (p NPMPackage) Tarball() []byte {
	manifest := map[string]any{"name": p.Name, "version": p.Version}
	maps.Copy(manifest, p.Manifest)
	files := map[string]string{"package.json": mustJSON(manifest)}
	maps.Copy(files, p.Files)
	return Tarball(files)
}

// npmFromSources reads one package directory: package.json's name and
// version, its other members as the Manifest, its other files as Files.
func npmFromSources(dir string) NPMPackage {
	files := sourceFiles(dir)
	var manifest map[string]any
	if err := json.Unmarshal([]byte(files["package.json"]), &manifest); err != nil {
		panic(fmt.Sprintf("hostile fixture %s: reading package.json: %v", dir, err))
	}
	delete(files, "package.json")
	name, _ := manifest["name"].(string)
	version, _ := manifest["version"].(string)
	if name == "" || version == "" {
		panic(fmt.Sprintf("hostile fixture %s: package.json has no name or version", dir))
	}
	delete(manifest, "name")
	delete(manifest, "version")
	return NPMPackage{Name: name, Version: version, Manifest: manifest, Files: files}
}

// sourceFiles are the regular files directly in dir, by base name.
func sourceFiles(dir string) map[string]string {
	entries, err := fs.ReadDir(hostile.Sources, dir)
	if err != nil {
		panic(fmt.Sprintf("hostile fixture: %v", err))
	}
	files := map[string]string{}
	for _, e := range entries {
		if e.Type().IsRegular() {
			files[e.Name()] = mustSource(path.Join(dir, e.Name()))
		}
	}
	return files
}

func mustSource(name string) string {
	b, err := fs.ReadFile(hostile.Sources, name)
	if err != nil {
		panic(fmt.Sprintf("hostile fixture: %v", err))
	}
	return string(b)
}
