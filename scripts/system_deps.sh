#!/usr/bin/env bash
# System packages the tests need that PyPI and Maven Central do not serve: PostgreSQL and
# MariaDB (Debian's postgresql and mariadb-server packages), the databases Debezium captures
# in tests/cdc, and ccache, through which scripts/env.sh compiles (a fresh run compiles the core's
# C more than once for the same Python: ~80 CPU-s a compile, ~12 s a repeat through ccache).
# Installed with apt-get when missing and this runs as root (or with passwordless sudo);
# otherwise a note, and those tests skip (under CI=true they fail) and compiles are not cached.
# Nothing happens when they are there.
set -euo pipefail
MISSING=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || MISSING+=(postgresql)
command -v mariadb-install-db >/dev/null 2>&1 || MISSING+=(mariadb-server)
command -v ccache >/dev/null 2>&1 || MISSING+=(ccache)
if [ ${#MISSING[@]} -eq 0 ]; then
    exit 0
fi
if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
    if $SUDO true 2>/dev/null; then
        export DEBIAN_FRONTEND=noninteractive
        echo "installing ${MISSING[*]} (Debian's packages) for tests/cdc and cached compiles" >&2
        $SUDO apt-get install -y -q "${MISSING[@]}" >/dev/null 2>&1 \
            || { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q "${MISSING[@]}" >/dev/null; }
        exit 0
    fi
fi
echo "note: ${MISSING[*]} (Debian's packages) not installed: tests/cdc will skip, compiles are not cached" >&2
