package main

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// smp is exactly the call Istio's injector makes (applyOverlayYAML): the result is the raw JSON
// returned by the Go implementation, not round-tripped through corev1.Pod.
func smp(original, patch []byte) ([]byte, error) {
	return strategicpatch.StrategicMergePatch(original, patch, corev1.Pod{})
}
