#!/usr/bin/env bash
# Runs every sig-api-machinery end-to-end spec of Kubernetes (less Slow, Serial and
# Disruptive ones) against Concord and against a kube-apiserver peer of the same release
# with no controller manager, for release N and N-1 (Concord emulating each), and
# prints per spec: Concord's result, the peer's and the expectation of expected.yaml.
# The binaries are built once and cached (test/kubepeer/build.sh).
#
#   test/conformance/run.sh                 # releases 1.37.2 and 1.36.3
#   test/conformance/run.sh 1.37.2          # one release
#   OUT=/tmp/conformance WORKERS=12 test/conformance/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -gt 0 ] || set -- 1.37.2 1.36.3
out=${OUT:-$(mktemp -d -t conformance.XXXXXX)}
status=0
for release in "$@"; do
  test/kubepeer/build.sh e2e-apimachinery "$release" >/dev/null
  test/kubepeer/build.sh kube-apiserver "$release" >/dev/null
  mkdir -p "$out/$release"
  go test ./test/conformance -run TestConformance -count=1 -v -timeout 0 \
    -args -full -peer -release "$release" -workers "${WORKERS:-8}" -out "$out/$release" || status=1
  echo "results of $release: $out/$release/results-$release.txt"
done
exit $status
