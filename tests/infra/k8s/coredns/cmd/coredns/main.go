// Command coredns is the cluster DNS of the test cluster: CoreDNS from
// github.com/coredns/coredns at the version pinned in ../../go.mod, built with
// only the plugins a cluster's DNS needs (its stock main links every cloud
// provider's SDK, which would triple the build for nothing the tests use).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The plugins in CoreDNS's own execution order (core/dnsserver/zdirectives.go).
var directives = []string{"bind", "ready", "health", "errors", "log", "cache", "kubernetes", "forward"}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
