// Command istio-webhook serves Istio's own sidecar-injection webhook (istio.io/istio's
// pkg/kube/inject.NewWebhook) outside istiod, so that bench/side-by-side.sh can load it exactly
// as it loads `sidecar-injector serve`: same injector ConfigMap, values and mesh config, same
// AdmissionReviews, TLS on loopback.
//
// The webhook is built as Istio's own webhook_test.go builds it: a file watcher over the
// injector config and values, a mesh watcher over the mesh config, and a fake multicluster
// controller (no API server is contacted).
//
//	istio-webhook serve   -config F -values F -mesh F [-addr 127.0.0.1:15017] [-monitoring-addr 127.0.0.1:15014]
//	istio-webhook respond -config F -values F -mesh F -review R   # the AdmissionReview response, on stdout
//	istio-webhook check   -review R -ours RESP [-istio RESP]      # both patches give the identical pod?
//	istio-webhook bench   -config F -values F -mesh F [-rounds 5] NAME=REVIEW...
//
// Logs go to stderr, at ISTIO_WEBHOOK_LOG_LEVEL (default warn). Native sidecars follow Istio's ENABLE_NATIVE_SIDECARS environment variable (the harness sets
// it to match `serve --native-sidecars`).
package main

import (
	"fmt"
	"os"

	istiolog "istio.io/istio/pkg/log"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	if err := configureLogging(); err != nil {
		fmt.Fprintf(os.Stderr, "istio-webhook: logging: %v\n", err)
		os.Exit(1)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serveCommand(os.Args[2:])
	case "respond":
		err = respondCommand(os.Args[2:])
	case "check":
		err = checkCommand(os.Args[2:])
	case "bench":
		err = benchCommand(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "istio-webhook %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: istio-webhook serve|respond|check|bench [flags] (see the package comment)")
	os.Exit(2)
}

// configureLogging sends Istio's logs to stderr (stdout carries results) at the level in
// ISTIO_WEBHOOK_LOG_LEVEL, warn by default: under load both servers log only problems.
func configureLogging() error {
	o := istiolog.DefaultOptions()
	o.OutputPaths = []string{"stderr"}
	level := os.Getenv("ISTIO_WEBHOOK_LOG_LEVEL")
	if level == "" {
		level = "warn"
	}
	o.SetDefaultOutputLevel(istiolog.DefaultScopeName, istiolog.StringToLevel(level))
	for _, scope := range istiolog.Scopes() {
		o.SetDefaultOutputLevel(scope.Name(), istiolog.StringToLevel(level))
	}
	return istiolog.Configure(o)
}
