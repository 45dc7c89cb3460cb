# Sourced by scripts/test and scripts/bench from the repository's root: installs what the
# tests and benchmarks need when it is missing (Debian packages, runsc, the sandbox's Debian
# roots, npm packages) and exports where they are.

need() { command -v "$1" >/dev/null 2>&1; }

install_debian() {
	local missing=()
	for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
	[ ${#missing[@]} -eq 0 ] && return 0
	local sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq "${missing[@]}"
}

need go || { echo "scripts/test: Go 1.26 is required (https://go.dev/dl/)" >&2; exit 1; }
need node && need npm || install_debian nodejs npm
# The witness interop test runs torchwood's litewitness, whose key sits in an ssh-agent and
# whose logs are added through its SQLite tables.
need sqlite3 && need ssh-agent && need ssh-add || install_debian sqlite3 openssh-client

# The sandbox runs packages under gVisor: runsc from Debian trixie (bookworm's 2022 build fails
# here; the trixie build runs on bookworm too), its root filesystems are built with mmdebstrap,
# and its trap network needs iproute2 and iptables. The desk's end-to-end tests drive Chromium.
install_debian mmdebstrap iptables iproute2 chromium
runsc_ok() { need runsc && runsc --version 2>/dev/null | grep -Eq 'version 0\.0~(2024|2025|2026)|version release-'; }
if ! runsc_ok; then
	deb=runsc_0.0~20240729.0-4+b7_amd64.deb
	sum=3c25a5130dfac2f71237d5baad56ac86a255de87a0400f11b36a555156dc325a
	tmp=$(mktemp -d)
	curl -fsSL -o "$tmp/$deb" "http://deb.debian.org/debian/pool/main/g/golang-gvisor-gvisor/$deb"
	echo "$sum  $tmp/$deb" | sha256sum -c --quiet
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo dpkg -i "$tmp/$deb" >/dev/null
	rm -rf "$tmp"
fi
# Debian roots for the sandbox are built once per machine and kept outside the checkout, so a
# fresh clone reuses them (building takes 1-3 min each; their digests are checked on use).
export HISTOR_ROOTFS_CACHE="${HISTOR_ROOTFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/histor/rootfs}"
if [ "$(id -u)" -eq 0 ] && { [ ! -f "$HISTOR_ROOTFS_CACHE/node.json" ] || [ ! -f "$HISTOR_ROOTFS_CACHE/python.json" ]; }; then
	echo "scripts/test: building the sandbox's Debian roots into $HISTOR_ROOTFS_CACHE (once per machine)" >&2
	go run ./cmd/histor sandbox roots --rootfs "$HISTOR_ROOTFS_CACHE" >&2
fi

# The RFC 8785 cross-check runs an independent implementation from npm, and the MCP client
# is tested against the reference server-everything; install them once into a project-local
# cache that the tests find through HISTOR_NPM_DIR.
export HISTOR_NPM_DIR="$PWD/.cache/npm"
if [ ! -d "$HISTOR_NPM_DIR/node_modules/canonicalize" ] ||
	[ ! -d "$HISTOR_NPM_DIR/node_modules/@modelcontextprotocol/server-everything" ]; then
	mkdir -p "$HISTOR_NPM_DIR"
	npm install --silent --no-audit --no-fund --prefix "$HISTOR_NPM_DIR" canonicalize@2.1.0 \
		@modelcontextprotocol/server-everything@2026.8.31 >/dev/null  # crawl/mcpclient pins the same release
fi
