// Command coredns is CoreDNS v1.12.1 with only the plugins a single test node needs: it serves the cluster's
// names from the Kubernetes API and nothing else (no forward: no query may leave the node).
//
// Upstream's main (coredns.go) blank-imports core/plugin, which pulls in every plugin (cloud providers
// included). This one imports coremain and just the eight plugins, and narrows dnsserver.Directives (the
// order in which plugins see a query) to those eight, keeping their relative order from upstream's
// core/dnsserver/zdirectives.go.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives is upstream's order restricted to the plugins above; a Corefile naming any other plugin is
// refused at startup.
var directives = []string{
	"bind",
	"ready",
	"health",
	"errors",
	"log",
	"loadbalance",
	"cache",
	"kubernetes",
}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
