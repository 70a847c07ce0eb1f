#!/usr/bin/env bash
# Builds a part of a real Kubernetes release from its Go modules, to run beside Concord,
# and prints the path of the binary. Binaries are cached under
# ${CONCORD_PEER_CACHE:-$HOME/.cache/concord-peer}; a cached one is reused.
#
#   test/kubepeer/build.sh kube-apiserver 1.37.2     # the API server peer
#   test/kubepeer/build.sh e2e-apimachinery 1.37.2   # test/e2e/apimachinery as one test binary
#   test/kubepeer/build.sh sample-apiserver 1.37.2   # k8s.io/sample-apiserver v0.37.2 (wardle.example.com)
#   test/kubepeer/build.sh helm 3.22.0               # the helm client of that release (3.x or 4.x)
#
# sample-apiserver is an ordinary module, published as v0.<minor>.<patch> of the release;
# it is built as a tool of a module that requires only it.
#
# The k8s.io/kubernetes module requires its staging modules (k8s.io/api, ...) at v0.0.0
# and replaces them with directories of its own repository; a module that depends on it
# must replace each with its published version, v0.<minor>.<patch>. The list is read from
# the module's own go.mod, so it follows the release.
set -euo pipefail
usage='usage: build.sh kube-apiserver|e2e-apimachinery|sample-apiserver|helm <release, e.g. 1.37.2>'
what=${1:?$usage}
release=${2:?$usage}
cache=${CONCORD_PEER_CACHE:-$HOME/.cache/concord-peer}
case "$what" in
  kube-apiserver) out="$cache/kube-apiserver-$release" ;;
  e2e-apimachinery) out="$cache/e2e-apimachinery-$release.test" ;;
  sample-apiserver) out="$cache/sample-apiserver-$release" ;;
  helm) out="$cache/helm-$release" ;;
  *) echo "build.sh: unknown part \"$what\": want kube-apiserver, e2e-apimachinery, sample-apiserver or helm" >&2; exit 2 ;;
esac
if [ -x "$out" ]; then echo "$out"; exit 0; fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# kubernetes_module writes the go.mod of a module that requires k8s.io/kubernetes.
kubernetes_module() {
  local gomod
  gomod=$(go mod download -json "k8s.io/kubernetes@v$release" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [ -f "$gomod" ] || { echo "build.sh: cannot download k8s.io/kubernetes@v$release" >&2; exit 1; }
  {
    printf 'module concordpeer\n\ngo 1.26\n\nrequire k8s.io/kubernetes v%s\n\n' "$release"
    # Every staging module the release requires at v0.0.0.
    sed -n 's/^[[:space:]]*\(k8s\.io\/[a-z0-9-]*\) v0\.0\.0$/\1/p' "$gomod" | sort -u |
      while read -r m; do printf 'replace %s => %s v0.%s\n' "$m" "$m" "${release#1.}"; done
  } > "$work/go.mod"
}

case "$what" in
kube-apiserver)
  kubernetes_module
  cat > "$work/main.go" <<'GO'
// Command kube-apiserver is Kubernetes' API server, as its release builds it.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() { os.Exit(cli.Run(app.NewAPIServerCommand())) }
GO
  target=build ;;
e2e-apimachinery)
  kubernetes_module
  mkdir -p "$work/apimachinery"
  cat > "$work/apimachinery/apimachinery_test.go" <<'GO'
// Package apimachinery runs Kubernetes' sig-api-machinery end-to-end specs against the
// cluster of --kubeconfig.
package apimachinery

import (
	"flag"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"

	_ "k8s.io/kubernetes/test/e2e/apimachinery" // registers the specs
)

func TestMain(m *testing.M) {
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

func TestSpecs(t *testing.T) {
	gomega.RegisterFailHandler(framework.Fail)
	ginkgo.RunSpecs(t, "sig-api-machinery")
}
GO
  target=test ;;
sample-apiserver)
  printf 'module concordpeer\n\ngo 1.26\n\nrequire k8s.io/sample-apiserver v0.%s\n\ntool k8s.io/sample-apiserver\n' "${release#1.}" > "$work/go.mod"
  target=k8s.io/sample-apiserver ;;
helm)
  major=${release%%.*}
  printf 'module concordpeer\n\ngo 1.26\n\nrequire helm.sh/helm/v%s v%s\n\ntool helm.sh/helm/v%s/cmd/helm\n' "$major" "$release" "$major" > "$work/go.mod"
  target=helm.sh/helm/v$major/cmd/helm ;;
esac

# The version the release's own build stamps in (without it the binary says
# v0.0.0-master, which clients that parse the server's version refuse).
minor=${release#1.}; minor=${minor%%.*}
pkg=k8s.io/component-base/version
ldflags="-X $pkg.gitVersion=v$release -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitVersion=v$release -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"

mkdir -p "$cache"
(
  cd "$work"
  GOFLAGS=-mod=mod go mod tidy >&2
  case "$target" in
  build) go build -ldflags "$ldflags" -o "$out.tmp" . ;;
  test) go test -c -ldflags "$ldflags" -o "$out.tmp" ./apimachinery ;;
  *) go build -ldflags "$ldflags" -o "$out.tmp" "$target" ;;
  esac
) >&2
mv "$out.tmp" "$out"
echo "$out"
