#!/usr/bin/env bash
# Resolve a JVM module's Maven artifacts and print its classpath.
#
#   bash scripts/jvm.sh jvm/kafka      -> the classpath (jars joined by ':') on stdout
#
# MODULE_DIR holds a checked-in pom.xml that only lists dependencies (nothing is
# built).  The first run resolves them with Maven into a project-local repository
# (.cache/m2, or $KAFKAREC_M2_REPO) and keeps the classpath in
# .cache/jvm/<module>-<sha256 of the pom>.classpath; a later run with the same pom
# reads that file and does not start Maven (nothing is downloaded).  A changed pom
# has another hash, so it is resolved again.  Add a module by adding a folder with a
# pom.xml under jvm/ (jvm/spark, jvm/debezium, ...): the script needs nothing else.
#
# A module with a src/ folder is an application to build (jvm/apicurio: Quarkus's build step around
# a thin jar): the first run builds it (`mvn package`, the output in .cache/jvm/<module>-<hash>/,
# the hash over the pom and src/) and prints its runnable jar, kept the same way.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -ne 1 ]; then
    echo "usage: bash scripts/jvm.sh MODULE_DIR   (a folder holding a pom.xml, e.g. jvm/kafka)" >&2
    exit 2
fi
MODULE="$1"
case "$MODULE" in /*) ;; *) MODULE="$ROOT/$MODULE" ;; esac
MODULE="$(cd "$MODULE" && pwd)"
POM="$MODULE/pom.xml"
[ -f "$POM" ] || { echo "jvm.sh: no pom.xml in $MODULE" >&2; exit 2; }
REPO="${KAFKAREC_M2_REPO:-$ROOT/.cache/m2}"
CACHE="$ROOT/.cache/jvm"
NAME="$(basename "$MODULE")"
if [ -d "$MODULE/src" ]; then
    HASH="$(cd "$MODULE" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)"
else
    HASH="$(sha256sum "$POM" | cut -c1-16)"
fi
CP_FILE="$CACHE/$NAME-$HASH.classpath"

# The cached classpath counts only while every jar it names is still there.
cached_ok() {
    [ -s "$CP_FILE" ] || return 1
    local jar
    IFS=':' read -r -a JARS < "$CP_FILE"
    for jar in "${JARS[@]}"; do
        [ -f "$jar" ] || return 1
    done
}

if ! cached_ok; then
    command -v mvn >/dev/null || { echo "jvm.sh: mvn is not installed (needed once to resolve $POM)" >&2; exit 3; }
    mkdir -p "$CACHE" "$REPO"
    # One Maven at a time per local repository (the suite resolves modules beside its tests, and
    # two Mavens writing one artifact into the repository can leave it half written); whoever
    # waited finds the classpath already cached.
    exec 8>"$CACHE/maven.lock"
    flock 8
fi
if ! cached_ok; then
    TMP="$CP_FILE.tmp.$$"
    trap 'rm -f "$TMP"' EXIT
    # -B: no colours/progress; the log goes to a file shown only when Maven fails.
    # Maven's JVM resolves and exits: too short for the C2 compiler and the default (G1) collector
    # to pay back their threads (measured: 6.5 -> 3.7 CPU-s a resolve from the local repo).
    if [ -d "$MODULE/src" ]; then
        OUT="$CACHE/$NAME-$HASH"
        rm -rf "$OUT"
        if ! MAVEN_OPTS="${MAVEN_OPTS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC}" mvn -B -q -f "$POM" -Dmaven.repo.local="$REPO" \
                -Dkafkarec.build.dir="$OUT" package > "$CACHE/$NAME.mvn.log" 2>&1; then
            cat "$CACHE/$NAME.mvn.log" >&2
            echo "jvm.sh: Maven could not build $POM" >&2
            exit 1
        fi
        # the runnable jar (Quarkus's legacy-jar: its manifest names the jars of lib/ beside it)
        RUNNER=("$OUT"/*-runner.jar)
        [ -f "${RUNNER[0]}" ] || { echo "jvm.sh: building $POM left no *-runner.jar in $OUT" >&2; exit 1; }
        printf '%s' "${RUNNER[0]}" > "$TMP"
    elif ! MAVEN_OPTS="${MAVEN_OPTS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC}" mvn -B -q -f "$POM" -Dmaven.repo.local="$REPO" \
            org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath \
            -Dmdep.outputFile="$TMP" -Dmdep.includeScope=runtime \
            > "$CACHE/$NAME.mvn.log" 2>&1; then
        cat "$CACHE/$NAME.mvn.log" >&2
        echo "jvm.sh: Maven could not resolve $POM" >&2
        exit 1
    fi
    mv "$TMP" "$CP_FILE"
fi
cat "$CP_FILE"
echo
