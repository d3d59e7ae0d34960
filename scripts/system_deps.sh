#!/usr/bin/env bash
# System packages the tests need that PyPI and Maven Central do not serve: PostgreSQL
# (Debian's postgresql package), the database Debezium captures in tests/cdc.  Installed
# with apt-get when missing and this runs as root (or with passwordless sudo); otherwise a
# note, and those tests skip (under CI=true they fail).  Nothing happens when it is there.
set -euo pipefail
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    exit 0
fi
if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
    if $SUDO true 2>/dev/null; then
        export DEBIAN_FRONTEND=noninteractive
        echo "installing PostgreSQL (Debian's postgresql package) for tests/cdc" >&2
        $SUDO apt-get install -y -q postgresql >/dev/null 2>&1 \
            || { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q postgresql >/dev/null; }
        exit 0
    fi
fi
echo "note: PostgreSQL (Debian's postgresql package) is not installed: tests/cdc will skip" >&2
