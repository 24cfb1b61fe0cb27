#!/usr/bin/env bash
# install-test-deps.sh installs what Parley's full test suite needs, on a
# Debian machine (as root) that already has Go:
#   - the claude CLI, pinned, into "$PARLEY_CACHE/claude-cli"
#   - Chromium (/usr/bin/chromium), for the browser tests
#   - templ, at the version go.mod requires
#   - PostgreSQL server binaries (Debian 12's `postgresql` is 15)
#   - docker-compose, to validate docker-compose.yml without a Docker daemon
#   - the MCP conformance suite (@modelcontextprotocol/conformance, pinned),
#     with Node 22 from npm when the system's node is older (it needs 22)
#   - axe-core (npm, pinned), the accessibility checker the browser tests
#     inject into every page
#   - bubblewrap, which confines runs when Parley is not root (the attack suite tests it)
#   - node and npm (Debian's) when missing: the claude CLI and the suite are npm packages
# Each part checks first and says "have X" or "installing X": it installs only
# what is missing, and when everything is there it runs no package manager
# (apt-get, npm, go install). It writes the variables the tests read to
# "$PARLEY_CACHE/env" (source it) and prints them.
#
# Usage: scripts/install-test-deps.sh        (PARLEY_CACHE defaults to ~/.cache/parley)
set -euo pipefail

CLAUDE_VERSION=2.1.328
CONFORMANCE_VERSION=0.1.16
AXE_VERSION=4.14.1
PARLEY_CACHE=${PARLEY_CACHE:-$HOME/.cache/parley}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

log() { printf 'install-test-deps: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# apt_install installs Debian packages, refreshing the package lists once.
APT_UPDATED=
apt_install() {
	[ "$(id -u)" -eq 0 ] || die "installing $* needs root (apt-get)"
	if [ -z "$APT_UPDATED" ]; then
		DEBIAN_FRONTEND=noninteractive apt-get update -qq
		APT_UPDATED=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

# install_claude puts claude $CLAUDE_VERSION under $PARLEY_CACHE/claude-cli,
# unless the version there already matches, and sets CLAUDE_BIN.
install_claude() {
	local prefix=$PARLEY_CACHE/claude-cli
	local pkg=$prefix/node_modules/@anthropic-ai/claude-code/package.json
	CLAUDE_BIN=$prefix/node_modules/.bin/claude
	local have=
	if [ -f "$pkg" ] && [ -x "$CLAUDE_BIN" ]; then
		have=$(node -p "require(process.argv[1]).version" "$pkg")
	fi
	if [ "$have" = "$CLAUDE_VERSION" ]; then
		log "have claude $CLAUDE_VERSION"
		return
	fi
	command -v npm >/dev/null || die "npm not found; install Node.js and npm first"
	log "installing claude $CLAUDE_VERSION into $prefix${have:+ (had $have)}"
	mkdir -p "$prefix"
	npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
		"@anthropic-ai/claude-code@$CLAUDE_VERSION" >&2
	[ -x "$CLAUDE_BIN" ] || die "npm install did not produce $CLAUDE_BIN"
}

# install_chromium installs Debian's chromium when /usr/bin/chromium is missing.
install_chromium() {
	CHROMIUM_BIN=/usr/bin/chromium
	if [ -x "$CHROMIUM_BIN" ]; then
		log "have chromium ($CHROMIUM_BIN)"
		return
	fi
	log "installing chromium"
	apt_install chromium
}

# install_templ go-installs templ at go.mod's version unless it is already there.
install_templ() {
	local want
	want=$(awk '$1 == "github.com/a-h/templ" { print $2 } $2 == "github.com/a-h/templ" { print $3 }' "$REPO/go.mod" | head -n1)
	[ -n "$want" ] || die "github.com/a-h/templ not found in $REPO/go.mod"
	local gobin
	gobin=$(go env GOBIN)
	[ -n "$gobin" ] || gobin=$(go env GOPATH)/bin
	TEMPL_BIN=$gobin/templ
	local have=
	if [ -x "$TEMPL_BIN" ]; then
		have=$("$TEMPL_BIN" version 2>/dev/null || true)
	fi
	if [ "$have" = "$want" ]; then
		log "have templ $want"
		return
	fi
	log "installing templ $want${have:+ (had $have)}"
	GOBIN=$gobin go install "github.com/a-h/templ/cmd/templ@$want"
}

# find_postgres sets PG_BINDIR to the directory of the postgres server binary:
# pg_config's (Debian's lives in postgresql-common or libpq-dev), else the
# newest of Debian's versioned directories; empty when there is none.
find_postgres() {
	PG_BINDIR=$(pg_config --bindir 2>/dev/null || true)
	if [ -z "$PG_BINDIR" ] || [ ! -x "$PG_BINDIR/postgres" ]; then
		PG_BINDIR=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
	fi
	if [ -z "$PG_BINDIR" ] || [ ! -x "$PG_BINDIR/postgres" ]; then
		PG_BINDIR=
	fi
}

# install_postgres installs the PostgreSQL server when find_postgres finds none.
install_postgres() {
	find_postgres
	if [ -n "$PG_BINDIR" ]; then
		log "have postgresql server ($PG_BINDIR)"
		return
	fi
	log "installing postgresql"
	apt_install postgresql
	find_postgres
	[ -n "$PG_BINDIR" ] || die "postgres binary not found after installing postgresql"
}

# install_conformance puts the MCP conformance suite under
# $PARLEY_CACHE/conformance and sets CONFORMANCE_CMD, the command that runs
# it. The suite needs Node 22 (fs.globSync); an older system node gets the
# npm package node@22 beside it.
install_conformance() {
	local prefix=$PARLEY_CACHE/conformance
	local js=$prefix/node_modules/@modelcontextprotocol/conformance/dist/index.js
	if [ ! -f "$js" ] || [ "$(node -p "require('$prefix/node_modules/@modelcontextprotocol/conformance/package.json').version" 2>/dev/null)" != "$CONFORMANCE_VERSION" ]; then
		log "installing @modelcontextprotocol/conformance $CONFORMANCE_VERSION"
		mkdir -p "$prefix"
		npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
			"@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >&2
	else
		log "have conformance suite $CONFORMANCE_VERSION"
	fi
	local nodebin
	nodebin=$(command -v node)
	if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then
		nodebin=$PARLEY_CACHE/node22/node_modules/.bin/node
		if [ -x "$nodebin" ]; then
			log "have node 22 for the conformance suite ($nodebin)"
		else
			log "installing node 22 for the conformance suite"
			mkdir -p "$PARLEY_CACHE/node22"
			npm install --prefix "$PARLEY_CACHE/node22" --no-audit --no-fund --loglevel=error node@22 >&2
		fi
	fi
	CONFORMANCE_CMD="$nodebin $js"
}

# install_axe puts axe-core $AXE_VERSION under $PARLEY_CACHE/axe and sets
# AXE_JS, the script the browser tests inject (server/axe_browser_test.go).
install_axe() {
	local prefix=$PARLEY_CACHE/axe
	local pkg=$prefix/node_modules/axe-core/package.json
	AXE_JS=$prefix/node_modules/axe-core/axe.min.js
	if [ -f "$AXE_JS" ] && [ "$(node -p "require(process.argv[1]).version" "$pkg" 2>/dev/null)" = "$AXE_VERSION" ]; then
		log "have axe-core $AXE_VERSION"
		return
	fi
	log "installing axe-core $AXE_VERSION into $prefix"
	mkdir -p "$prefix"
	npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "axe-core@$AXE_VERSION" >&2
	[ -f "$AXE_JS" ] || die "npm install did not produce $AXE_JS"
}

# write_env writes the variables the tests read to $PARLEY_CACHE/env and prints them.
write_env() {
	local env=$PARLEY_CACHE/env tmp
	tmp=$(mktemp "$PARLEY_CACHE/env.XXXXXX")
	{
		echo "# Written by scripts/install-test-deps.sh; source this file before running the tests."
		printf 'export PARLEY_CLAUDE_BIN=%q\n' "$CLAUDE_BIN"
		printf 'export PARLEY_CHROMIUM_BIN=%q\n' "$CHROMIUM_BIN"
		printf 'export PARLEY_TEMPL_BIN=%q\n' "$TEMPL_BIN"
		printf 'export PARLEY_PG_BINDIR=%q\n' "$PG_BINDIR"
		printf 'export PARLEY_CONFORMANCE=%q\n' "$CONFORMANCE_CMD"
		printf 'export PARLEY_AXE_JS=%q\n' "$AXE_JS"
		printf 'export PATH=%q:"$PATH"\n' "$(dirname "$TEMPL_BIN")"
	} >"$tmp"
	mv "$tmp" "$env"
	log "wrote $env"
	cat "$env"
}

# install_compose installs docker-compose, used only to check docker-compose.yml
# (`docker-compose config -q` needs no Docker daemon).
install_compose() {
	if command -v docker-compose >/dev/null; then
		log "have docker-compose"
		return
	fi
	log "installing docker-compose (for the compose file check)"
	apt_install docker-compose
}

# install_bwrap installs bubblewrap when bwrap is missing.
install_bwrap() {
	if command -v bwrap >/dev/null; then
		log "have bubblewrap"
		return
	fi
	log "installing bubblewrap"
	apt_install bubblewrap
}

# install_node installs Debian's nodejs and npm when either is missing (the
# claude CLI needs node 18 or newer, which Debian 12's is).
install_node() {
	if command -v node >/dev/null && command -v npm >/dev/null; then
		log "have node $(node --version) and npm"
		return
	fi
	log "installing node and npm"
	apt_install nodejs npm
}

main() {
	command -v go >/dev/null || die "go not found: install Go (the version go.mod names) first"
	mkdir -p "$PARLEY_CACHE"
	install_node
	install_claude
	install_chromium
	install_templ
	install_postgres
	install_compose
	install_conformance
	install_bwrap
	install_axe
	write_env
}

main "$@"
