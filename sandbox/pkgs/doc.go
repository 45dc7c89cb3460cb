// Package pkgs resolves and installs the npm and PyPI packages the sandbox
// observes, and says what the registry records about each version.
//
// It covers the stages before anything runs in gVisor:
//
//	spec      ParseSpec: npm:<name>[@<version>], pypi:<name>[==<version>] or
//	          a local .tgz / .whl file, validated, with its canonical
//	          artifact string (npm:<name>@<version>, pypi:<name>==<version>)
//	resolve   the registry's metadata for one version, its artifact (npm
//	          tarball, PyPI wheel) and its VersionFacts
//	install   on the host, the only stage that reaches a registry: the
//	          artifact is downloaded within a size bound and checked against
//	          the digest the registry published, then installed with npm
//	          --ignore-scripts or pip --only-binary=:all: so that no package
//	          code runs; the result names the packages whose install scripts
//	          a later, traced stage must run, and the command that starts the
//	          server from the mount point /work/pkg
//
// Every failure is an *Error carrying the sandbox.Status it ends the
// observation with; StatusOf reads it from any error.
//
// Version facts say "unknown" whenever the registry did not send the fields
// that would tell: the npm registry these machines reach sends no _npmUser,
// no dist.signatures and no dist.attestations, and its documents must never
// read as "provenance lost".
package pkgs
