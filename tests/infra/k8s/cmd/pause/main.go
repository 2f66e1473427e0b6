// Command pause is the process of every pod sandbox on the test node: it holds
// the pod's namespaces, reaps the zombies it inherits, and exits on SIGINT or
// SIGTERM. Kubernetes' own pause image cannot be pulled here (no registry), so
// the node imports an image of this binary (see ../../node.py).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
