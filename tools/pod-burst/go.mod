module sidecar-injector.invalid/tools/pod-burst

go 1.26.0
