// Package hostile holds the sources of histor's hostile fixture packages:
// MCP servers over stdio whose tools each do one hostile thing (exfiltrate
// decoys by DNS, HTTP, HTTPS, SMTP and raw TCP, read secrets, fill /tmp,
// fork until refused, allocate past the memory limit), and an npm package
// whose install script never ends. They exist only for the sandbox's tests;
// pkgstest builds the npm tarballs and the wheel from them.
//
// The package sits under testdata so that no ./... pattern builds, vets or
// lists it as part of histor; pkgstest imports it by its path, which the go
// tool allows. Embedding happens here because //go:embed cannot reach a
// parent directory.
package hostile

import "embed"

// Sources are the packages' files: npm/fixture and npm/install (each a
// package.json and plain JavaScript, no dependencies), and pypi (the
// histor_hostile_fixture module and its entry_points.txt). The patterns
// name files, so __init__.py is embedded although it begins with "_".
//
//go:embed npm/fixture/* npm/install/* pypi/entry_points.txt pypi/histor_hostile_fixture/*.py
var Sources embed.FS
