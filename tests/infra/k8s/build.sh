#!/usr/bin/env bash
# Build the pinned Kubernetes test-cluster tools, once per version set.
#
# Why: the integration tests run a real kube-apiserver, etcd, controller manager
# and scheduler, a real node (kubelet, kube-proxy, containerd with its runc shim,
# CoreDNS), plus kubectl and helm. Release downloads (dl.k8s.io, GitHub) are not
# reachable from CI; the Go module proxy is. So the tools are compiled from the
# versions pinned in go.mod/go.sum (control plane, node, kubectl), containerd/
# (containerd, its shim, ctr), crictl/, coredns/ (CoreDNS) and helm/ into a cache
# outside the repository:
#
#   ${JOBCLUSTER_CACHE:-$HOME/.cache/jobcluster}/k8s-<k8s>-etcd-<etcd>-containerd-<v>-coredns-<v>-crictl-<v>-helm-<helm>/bin
#
# runc and the CNI plugins come from Debian's packages (runc,
# containernetworking-plugins), which the Makefile installs.
#
# A complete bin dir is reused as is (no Go needed then). Safe to run
# concurrently (flock) and after an interrupted build (builds into a temp dir,
# renamed into place when every binary linked).
#
# stdout: exactly one line, the bin dir. Progress and errors go to stderr.
# Environment: JOBCLUSTER_CACHE (cache root), GO (go binary), the usual GO* vars
# (GOMODCACHE, GOCACHE, GOPROXY) are honoured.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tools=(etcd pause kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy
       containerd containerd-shim-runc-v2 ctr crictl coredns helm)

require_version() { # <go.mod> <module path>
    awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$1"
}
k8s_version=$(require_version "$here/go.mod" k8s.io/kubernetes)
etcd_version=$(require_version "$here/go.mod" go.etcd.io/etcd/server/v3)
helm_version=$(require_version "$here/helm/go.mod" helm.sh/helm/v3)
containerd_version=$(require_version "$here/containerd/go.mod" github.com/containerd/containerd/v2)
coredns_version=$(require_version "$here/coredns/go.mod" github.com/coredns/coredns)
crictl_version=$(require_version "$here/crictl/go.mod" sigs.k8s.io/cri-tools)
if [[ -z $k8s_version || -z $etcd_version || -z $helm_version || -z $containerd_version || -z $coredns_version || -z $crictl_version ]]; then
    echo "build.sh: cannot read the pinned versions from the go.mod files under $here" >&2
    exit 2
fi

cache_root=${JOBCLUSTER_CACHE:-$HOME/.cache/jobcluster}
name="k8s-${k8s_version}-etcd-${etcd_version}-containerd-${containerd_version}-coredns-${coredns_version}-crictl-${crictl_version}-helm-${helm_version}"
bin="$cache_root/$name/bin"

is_complete() {
    [[ -f $bin/.complete ]] || return 1
    local t
    for t in "${tools[@]}"; do [[ -x $bin/$t ]] || return 1; done
}

if is_complete; then
    echo "$bin"
    exit 0
fi

go=${GO:-$(command -v go || true)}
[[ -z $go && -x /usr/local/go/bin/go ]] && go=/usr/local/go/bin/go
if [[ -z $go || ! -x $go ]]; then
    cat >&2 <<EOF
build.sh: 'go' not found, and the Kubernetes test tools are not built yet
  ($bin).
Install Go >= 1.26 (https://go.dev/dl/) and put it on PATH, or set GO=/path/to/go.
EOF
    exit 2
fi
go_minor=$("$go" env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
if [[ ! $go_minor =~ ^[0-9]+$ ]] || (( go_minor < 26 )); then
    echo "build.sh: $("$go" env GOVERSION) is too old; Kubernetes $k8s_version needs Go >= 1.26 (set GO=...)" >&2
    exit 2
fi

mkdir -p "$cache_root/$name"
if command -v flock >/dev/null; then
    exec 9>"$cache_root/$name/.lock"
    if ! flock -n 9; then
        echo "build.sh: another build of $name is running; waiting for it" >&2
        flock 9
    fi
fi
if is_complete; then
    echo "$bin"
    exit 0
fi

tmp=$(mktemp -d "$cache_root/$name/bin.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Reproducible, static, stripped binaries; never switch toolchains or touch go.mod.
export GOTOOLCHAIN=local CGO_ENABLED=0
# No DWARF (the linker strips it anyway) and the compiler's GC half as often: 16% less time, the same binaries
export GOFLAGS="-mod=readonly -trimpath -gcflags=all=-dwarf=false${GOFLAGS:+ $GOFLAGS}"
export GOGC=${GOGC:-200}

minor=$(echo "$k8s_version" | cut -d. -f2)
k8s_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    k8s_ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

# helm's own Makefile stamps the Kubernetes version its lint/capabilities assume.
helm_k8s=$(require_version "$here/helm/go.mod" k8s.io/client-go)   # v0.<minor>.<patch>
helm_k8s_minor=$(echo "$helm_k8s" | cut -d. -f2)
helm_ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    helm_ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$helm_k8s_minor"
done

start=$SECONDS
echo "build.sh: building $name into $bin with $("$go" env GOVERSION) (cold: ~10 min on 2 idle cores, longer beside other work)" >&2
# One invocation for all control-plane binaries, so shared packages compile once.
(cd "$here" && "$go" build -ldflags "$k8s_ldflags" -o "$tmp/" \
    ./cmd/etcd \
    ./cmd/pause \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kubectl \
    k8s.io/kubernetes/cmd/kubelet \
    k8s.io/kubernetes/cmd/kube-proxy)
echo "build.sh: control plane, node and kubectl built after $((SECONDS - start)) s; building containerd" >&2
# Snapshotters that need cgo or kernel parts this node does not use are left out.
containerd_ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd_version"
(cd "$here/containerd" && "$go" build -tags "no_btrfs no_devmapper no_zfs" -ldflags "$containerd_ldflags" -o "$tmp/" \
    github.com/containerd/containerd/v2/cmd/containerd \
    github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
    github.com/containerd/containerd/v2/cmd/ctr)
echo "build.sh: containerd built after $((SECONDS - start)) s; building crictl, coredns and helm" >&2
(cd "$here/crictl" && "$go" build -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$crictl_version" -o "$tmp/" sigs.k8s.io/cri-tools/cmd/crictl)
(cd "$here/coredns" && "$go" build -ldflags "-s -w" -o "$tmp/" ./cmd/coredns)
(cd "$here/helm" && "$go" build -ldflags "$helm_ldflags" -o "$tmp/" helm.sh/helm/v3/cmd/helm)

for t in "${tools[@]}"; do
    [[ -x $tmp/$t ]] || { echo "build.sh: $t missing after the build" >&2; exit 1; }
done
printf 'kubernetes %s\netcd %s\ncontainerd %s\ncrictl %s\ncoredns %s\nhelm %s\ngo %s\n' "$k8s_version" "$etcd_version" \
    "$containerd_version" "$crictl_version" "$coredns_version" "$helm_version" "$("$go" env GOVERSION)" >"$tmp/VERSIONS"
chmod 755 "$tmp"
touch "$tmp/.complete"
rm -rf "$bin"
mv "$tmp" "$bin"
trap - EXIT
echo "build.sh: built $name in $((SECONDS - start)) s" >&2
echo "$bin"
