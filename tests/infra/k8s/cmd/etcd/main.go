// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3 at the
// version pinned in ../../go.mod (the one Kubernetes itself is tested with).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
